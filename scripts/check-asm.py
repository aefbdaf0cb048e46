#!/usr/bin/env python3
# check-asm.py — what the assembly promises unwinders and CET or BTI, checked on the built objects.
#
#   [CXX=aarch64-linux-gnu-g++] check-asm.py SWITCH_CONTEXT_O OTHER_ASM_OBJECTS...
#
# x86-64 objects:
# 1. Every object says, in .note.gnu.property, that it supports IBT (indirect-branch
#    tracking: endbr64 at every indirect-jump target) and not shadow stacks (a context
#    resumes with a `ret` its own call pushed, which a shadow stack does not hold).
# 2. Linked with code built with -fcf-protection=full (a relocatable link, `ld -r`, which
#    merges the notes as the final link does), they leave the result marked IBT and not
#    SHSTK: without the note the linker would silently drop IBT too. (A whole program on
#    Debian 12 is marked neither way whatever we do: glibc's start files carry no note.)
# 3. switch_context's unwind information: from the instruction after the stack switch to
#    .Lresume, the return address is undefined (an unwinder stops: the frames below belong
#    to the context being loaded), and at .Lresume it is back at the caller's slot.
#
# AArch64 objects (the tools are CXX's: its prefix, aarch64-linux-gnu-, names ld and objdump):
# 1. Every object says BTI (`bti c` at each entry) and not PAC (return addresses are not
#    signed: gnu_property.h says why).
# 2. Linked with code built with -mbranch-protection=bti, the result still says BTI.
# 3. switch_context's unwind information: x30 is undefined from the instruction after
#    `mov sp, x9` (the stack switch) to the end: until its `ret`, no frame describes it.
import os
import re
import subprocess
import sys
import tempfile


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


# The compiler the objects were built with, and the prefix of its binutils.
CXX = os.environ.get("CXX", "g++")
PREFIX = CXX[: -len("g++")] if CXX.endswith("g++") else ""


def is_aarch64(path):
    return re.search(r"Machine:\s+AArch64", run("readelf", "-h", path)) is not None


def features(path):
    notes = run("readelf", "-n", path)
    match = re.search(r"(?:x86|AArch64) feature: (.*)", notes)
    return set(f.strip() for f in match.group(1).split(",")) if match else set()


def cfi_rows(path):
    """(address, return-address rule) for each row of the object's only FDE."""
    rows = []
    for line in run("readelf", "-wF", path).splitlines():
        match = re.match(r"^([0-9a-f]{16})\s+\S+\s+(\S+)", line)
        if match:
            rows.append((int(match.group(1), 16), match.group(2)))
    return rows[1:]  # the first row is the CIE's


def rule_at(rows, address):
    rule = None
    for row_address, row_rule in rows:
        if row_address <= address:
            rule = row_rule
    return rule


def merged_features(switch_object, others, flags):
    """The note of the objects linked (ld -r) with C++ code built with `flags`."""
    with tempfile.TemporaryDirectory() as scratch:
        code_cpp = os.path.join(scratch, "code.cpp")
        with open(code_cpp, "w", encoding="utf-8") as f:
            f.write("int twice(int x) { return 2 * x; }\n")
        code_o, merged_o = os.path.join(scratch, "code.o"), os.path.join(scratch, "merged.o")
        run(CXX, *flags, "-c", code_cpp, "-o", code_o)
        run(PREFIX + "ld", "-r", code_o, switch_object, *others, "-o", merged_o)
        return features(merged_o)


def disassembly(path):
    code = run(PREFIX + "objdump", "-d", "--no-show-raw-insn", path)
    return [(int(m.group(1), 16), m.group(2).strip())
            for m in re.finditer(r"^\s+([0-9a-f]+):\s+(.*)$", code, re.MULTILINE)]


def check_notes(switch_object, others, flag, wanted, refused, problems):
    """Each object's note, and the note of them linked with code built with `flag`, say
    `wanted` and not `refused`."""
    expected = f"expected {wanted} and not {refused}"
    for path in [switch_object, *others]:
        found = features(path)
        if wanted not in found or refused in found:
            problems.append(f"{path}: .note.gnu.property says {sorted(found) or 'nothing'}, {expected}")
    found = merged_features(switch_object, others, [flag])
    if wanted not in found or refused in found:
        problems.append(f"linked with {flag} code, they are marked {sorted(found) or 'nothing'}, {expected}")


def check_x86_64(switch_object, others, problems):
    check_notes(switch_object, others, "-fcf-protection=full", "IBT", "SHSTK", problems)

    instructions = disassembly(switch_object)
    switch = next(i for i, (_, text) in enumerate(instructions) if re.search(r"mov\s+0x30\(%rsi\),%rsp", text))
    resume = max(address for address, text in instructions if text.startswith("endbr64"))
    rows = cfi_rows(switch_object)
    for address, text in instructions[switch + 1:]:
        if address >= resume:
            break
        if rule_at(rows, address) != "u":
            problems.append(f"switch_context+{address:#x} ({text}): the return address is "
                            f"'{rule_at(rows, address)}' after the stack switch, expected undefined")
    if rule_at(rows, resume) != "c-8":
        problems.append(f"switch_context's .Lresume: the return address is '{rule_at(rows, resume)}', "
                        "expected c-8")
    return "IBT and not SHSTK", "-fcf-protection"


def check_aarch64(switch_object, others, problems):
    check_notes(switch_object, others, "-mbranch-protection=bti", "BTI", "PAC", problems)

    # The raw call frame instructions: where x30 (r30) becomes undefined.
    undefined_from = None
    location = 0
    for line in run("readelf", "--debug-dump=frames", switch_object).splitlines():
        advance = re.search(r"DW_CFA_advance_loc\S*: \d+ to ([0-9a-f]+)", line)
        if advance:
            location = int(advance.group(1), 16)
        if re.search(r"DW_CFA_undefined: r30\b", line) and undefined_from is None:
            undefined_from = location
    instructions = disassembly(switch_object)
    switch = next((address for address, text in instructions if re.match(r"mov\s+sp, x9", text)), None)
    if switch is None:
        problems.append(f"{switch_object}: no `mov sp, x9` (the stack switch) found")
    elif undefined_from != switch + 4:
        problems.append(f"switch_context: x30 is made undefined at "
                        f"{undefined_from if undefined_from is None else hex(undefined_from)}, "
                        f"expected right after the stack switch, at {switch + 4:#x}")
    return "BTI and not PAC", "-mbranch-protection=bti"


def main(switch_object, others):
    problems = []
    check = check_aarch64 if is_aarch64(switch_object) else check_x86_64
    says, flags = check(switch_object, others, problems)
    for problem in problems:
        print(f"check-asm: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check-asm: {1 + len(others)} objects say {says}, and so does {flags} code linked "
          "with them; switch_context's unwind rows are defined across the stack switch")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
