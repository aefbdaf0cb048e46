#!/usr/bin/env python3
# check-asm.py — what the assembly promises unwinders and CET, checked on the built objects.
#
#   check-asm.py SWITCH_CONTEXT_O OTHER_ASM_OBJECTS...
#
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
import os
import re
import subprocess
import sys
import tempfile


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def features(path):
    notes = run("readelf", "-n", path)
    match = re.search(r"x86 feature: (.*)", notes)
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


def main(switch_object, others):
    problems = []
    for path in [switch_object, *others]:
        found = features(path)
        if "IBT" not in found or "SHSTK" in found:
            problems.append(f"{path}: .note.gnu.property says {sorted(found) or 'nothing'}, "
                            "expected IBT and not SHSTK")

    with tempfile.TemporaryDirectory() as scratch:
        code_cpp = os.path.join(scratch, "code.cpp")
        with open(code_cpp, "w", encoding="utf-8") as f:
            f.write("int twice(int x) { return 2 * x; }\n")
        code_o, merged_o = os.path.join(scratch, "code.o"), os.path.join(scratch, "merged.o")
        run("g++", "-fcf-protection=full", "-c", code_cpp, "-o", code_o)
        run("ld", "-r", code_o, switch_object, *others, "-o", merged_o)
        found = features(merged_o)
        if "IBT" not in found or "SHSTK" in found:
            problems.append(f"linked with -fcf-protection=full code, they are marked "
                            f"{sorted(found) or 'nothing'}, expected IBT and not SHSTK")

    code = run("objdump", "-d", "--no-show-raw-insn", switch_object)
    instructions = [(int(m.group(1), 16), m.group(2).strip())
                    for m in re.finditer(r"^\s+([0-9a-f]+):\s+(.*)$", code, re.MULTILINE)]
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

    for problem in problems:
        print(f"check-asm: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check-asm: {1 + len(others)} objects say IBT and not SHSTK, and so does -fcf-protection "
          "code linked with them; switch_context's unwind rows are defined across the stack switch")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
