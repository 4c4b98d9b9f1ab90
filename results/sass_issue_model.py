"""A single-warp issue model of a SASS loop: how many cycles one warp, alone
on its scheduler, takes to issue one pass of the loop, from the compiler's own
control codes (stall counts and scoreboard waits). Variable latencies (shared
memory, shuffles, MUFU) are fixed guesses, so compare variants of one loop
with it; do not read its cycles as a measurement.

Used for the depthwise loop of the wgmma kernel (kernels/NOTES.md, v10),
which runs one warp per scheduler and is bound by its dependency chains:

    nvcc -gencode=arch=compute_90a,code=sm_90a -DFUSED_DWSEP_SM90A -O3 -std=c++17 \\
         -c kernels/fused_dwsep.cu -o k.o && cuobjdump -sass k.o > k.sass
    python results/sass_issue_model.py k.sass wgmma_kernel

cuobjdump comes with the CUDA toolkit; where a toolkit lacks it, PyPI's
nvidia-cuda-cuobjdump wheel has it (bin/cuobjdump; `nvcc ... -cubin -o k.cubin`
then `cuobjdump -sass k.cubin`).

It models the innermost loop that contains a MUFU.EX2 (the GELU), and
prints its length, its instruction mix and the model's cycles; where the
loop waits for wgmmas (WARPGROUP.DEPBAR), also the part from the last such
wait to the loop's last STSM (the 16-bit kernel's release and depthwise:
the path from a warpgroup's wgmma wait to its next turn). For the 16-bit
kernel name its instantiation, e.g. the headline's (bf16, aligned rows):

    python results/sass_issue_model.py k.sass \
        h16_kernelINS2_4TileILi64ELi256ELi4EEE13__nv_bfloat16Lb1E
"""
import re
import sys
from collections import Counter

# Cycles until a variable-latency result is ready (guesses); fixed-latency
# instructions are covered by the stall counts the compiler encoded.
LATENCY = {"LDS": 30, "SHFL": 26, "MUFU": 18, "LDG": 400, "S2R": 20, "LDC": 20, "STS": 20, "BAR": 20}
DEFAULT_LATENCY = 20


def parse(sass):
    """(address, text, high control word) of each instruction."""
    lines = sass.split("\n")
    out = []
    for i, line in enumerate(lines[:-1]):
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);\s+/\* (0x[0-9a-f]+) \*/", line)
        m2 = re.match(r"\s+/\* (0x[0-9a-f]+) \*/", lines[i + 1]) if m else None
        if m and m2:
            out.append((int(m.group(1), 16), m.group(2).strip(), int(m2.group(1), 16)))
    return out


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]


def issue_cycles(instructions):
    """In-order issue: each instruction waits for the scoreboards it names,
    sets the one it names with its latency, then holds issue for its stall count."""
    t, ready = 0, [0] * 6
    for _, text, hi in instructions:
        ctrl = hi >> 41  # stall [0:4], yield [4], write sb [5:8], read sb [8:11], wait mask [11:17]
        stall, wsb, rsb, wait = ctrl & 15, (ctrl >> 5) & 7, (ctrl >> 8) & 7, (ctrl >> 11) & 63
        t = max([t] + [ready[b] for b in range(6) if wait >> b & 1])
        if wsb != 7:
            ready[wsb] = t + LATENCY.get(opcode(text), DEFAULT_LATENCY)
        if rsb != 7:
            ready[rsb] = t + 4
        t += max(stall, 1)
    return t


def chunk_loop(ins):
    """The chunk loop of (address, text) pairs in address order: (lo, hi) of the
    innermost loop holding a MUFU.EX2 (the GELU), and the indices, within it,
    of its release and depthwise (from its last wgmma wait to its last STSM;
    empty where it has none). None if there is no such loop."""
    mufu = [a for a, t in ins if "MUFU.EX2" in t]
    loops = []
    for a, t in ins:
        m = re.search(r"BRA (0x[0-9a-f]+)", t)
        if m and any(int(m.group(1), 16) <= u < a for u in mufu):
            loops.append((int(m.group(1), 16), a))
    if not loops:
        return None
    lo, hi = min(loops, key=lambda r: r[1] - r[0])
    inside = [k for k, (a, _) in enumerate(ins) if lo <= a <= hi]
    waits = [k for k in inside if "WARPGROUP.DEPBAR" in ins[k][1]]
    stores = [k for k in inside if "STSM" in ins[k][1]]
    depthwise = range(waits[-1] + 1, stores[-1] + 1) if waits and stores and stores[-1] > waits[-1] else range(0)
    return lo, hi, depthwise


def main(path, function):
    text = open(path).read()
    start = text.index(function)
    end = text.find("Function :", start)
    ins = parse(text[start : end if end > 0 else None])
    lo, hi, depthwise = chunk_loop([(a, t) for a, t, _ in ins])
    loop = [x for x in ins if lo <= x[0] <= hi]
    mix = Counter(opcode(t) for _, t, _ in loop).most_common(10)
    print(f"loop {lo:#x}-{hi:#x}: {len(loop)} instructions, {issue_cycles(loop)} cycles a pass (model)")
    print("mix:", ", ".join(f"{op} {n}" for op, n in mix))
    if depthwise:
        seg = [ins[k] for k in depthwise]
        print(f"from the last wgmma wait to the last STSM: {len(seg)} instructions, "
              f"{issue_cycles(seg)} cycles (model)")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "wgmma_kernel")
