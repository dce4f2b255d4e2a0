#!/usr/bin/env python3
"""Prints the slots of HotSpot's JmmInterface table in a libjvm.so that keeps its symbol table:
the R_X86_64_RELATIVE relocations inside `jmm_interface`, each named by the function it points
to. Usage: scripts/jmm_slots.py /usr/lib/jvm/JDK/lib/server/libjvm.so (docs/design.md, "VM
threads named in full")."""
import re
import subprocess
import sys

lib = sys.argv[1]
syms, base = {}, None
for line in subprocess.run(["nm", lib], capture_output=True, text=True, check=True).stdout.splitlines():
    p = line.split()
    if len(p) == 3:
        syms.setdefault(int(p[0], 16), p[2])
        if p[2] == "_ZL13jmm_interface":
            base = int(p[0], 16)
if base is None:
    sys.exit(f"{lib}: no jmm_interface symbol (a stripped libjvm.so)")
slots = []
for line in subprocess.run(["readelf", "-rW", lib], capture_output=True, text=True, check=True).stdout.splitlines():
    p = line.split()
    if len(p) >= 4 and re.fullmatch("[0-9a-f]{16}", p[0]) and base <= int(p[0], 16) < base + 8 * 48:
        slots.append(((int(p[0], 16) - base) // 8, syms.get(int(p[-1], 16), p[-1])))
for slot, name in sorted(slots):
    print(slot, name)
