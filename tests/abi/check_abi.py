#!/usr/bin/env python3
"""check_abi.py MPI_H PREDEFINED_DEF -- what the compilers cannot check.

The C++ test checks every row of predefined.def against mpi.h; it cannot
see a datatype that mpi.h defines and the table forgets. This script reads
both files as text and checks:
  - every datatype handle #define in mpi.h has its row, and every row its
    #define, with the same index; aliases and unsupported types agree;
  - no two handle constants share a value (aliases aside), and predefined
    indexes stay below the first user index (1024);
  - every MPI_X prototype has a PMPI_X twin with the same return and
    parameter types, and no PMPI_ prototype is alone;
  - the header stays C89 (no // comments) and defines no other
    implementation's identification macros.
"""
import re
import sys

HANDLE_KINDS = {0x44: "COMM", 0x48: "GROUP", 0x4C: "DATATYPE", 0x54: "ERRHANDLER",
                0x58: "OP", 0x5C: "INFO", 0x60: "WIN", 0x64: "FILE", 0x6C: "REQUEST",
                0x70: "MESSAGE"}
FOREIGN_MACROS = ("MPICH", "MPICH_VERSION", "MPICH_NAME", "OPEN_MPI", "OMPI_MAJOR_VERSION",
                  "MSMPI_VER", "I_MPI_VERSION")

errors = []


def fail(msg):
    errors.append(msg)


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def read_defines(text):
    defines = {}
    for m in re.finditer(r"^#define\s+(\w+)(?:[ \t]+(.*?))?[ \t]*$", text, flags=re.M):
        defines[m.group(1)] = (m.group(2) or "").strip()
    return defines


def check_datatypes(defines, def_text):
    rows = {}
    for m in re.finditer(r"^ULMPI_DATATYPE\(\s*(\w+)\s*,\s*(\d+)\s*,", def_text, flags=re.M):
        name, index = m.group(1), int(m.group(2))
        if name in rows:
            fail(f"predefined.def: {name} has two rows")
        rows[name] = index
    aliases = dict(re.findall(r"^ULMPI_DATATYPE_ALIAS\(\s*(\w+)\s*,\s*(\w+)\s*\)", def_text,
                              flags=re.M))
    unsupported = re.findall(r"^ULMPI_DATATYPE_UNSUPPORTED\(\s*(\w+)\s*\)", def_text, flags=re.M)
    if not rows:
        fail("predefined.def: no ULMPI_DATATYPE rows found")

    header = {}
    for name, value in defines.items():
        m = re.fullmatch(r"0x4c([0-9a-fA-F]{6})", value)
        if m and name != "MPI_DATATYPE_NULL":
            header[name] = int(m.group(1), 16)
    for name, index in header.items():
        if name not in rows:
            fail(f"mpi.h defines datatype {name} (index {index}) but predefined.def has no row")
        elif rows[name] != index:
            fail(f"{name}: index {index} in mpi.h, {rows[name]} in predefined.def")
    for name in rows:
        if name not in header:
            fail(f"predefined.def has {name} but mpi.h does not define it as a datatype handle")
    for alias, target in aliases.items():
        if defines.get(alias) != target:
            fail(f"alias {alias}: mpi.h defines it as {defines.get(alias)!r}, table says {target}")
    for name in unsupported:
        if defines.get(name) != "MPI_DATATYPE_NULL":
            fail(f"{name}: unsupported in the table, but mpi.h has {defines.get(name)!r}")
    # A datatype #define that is neither a handle, an alias nor unsupported.
    for name, value in defines.items():
        if value in rows and name not in aliases:
            fail(f"{name} = {value}: an alias missing from predefined.def")
        if value == "MPI_DATATYPE_NULL" and name not in unsupported:
            fail(f"{name} = MPI_DATATYPE_NULL: missing from predefined.def's unsupported rows")
    return len(rows)


def check_handles(defines):
    seen = {}
    count = 0
    for name, value in defines.items():
        m = re.fullmatch(r"0x([0-9a-fA-F]{2})([0-9a-fA-F]{6})", value)
        if not m or not name.startswith("MPI_"):
            continue
        kind, index = int(m.group(1), 16), int(m.group(2), 16)
        if kind not in HANDLE_KINDS:
            continue
        if name.startswith("MPI_") and kind == 0x64 and index >= 0x400000:
            continue  # attribute keyvals (0x644000nn), not FILE handles
        count += 1
        if index >= 1024:
            fail(f"{name} = {value}: a predefined index must be below 1024")
        key = (kind, index)
        if key in seen:
            fail(f"{name} and {seen[key]} share the handle value {value}")
        seen[key] = name
    if count == 0:
        fail("mpi.h: no handle constants found")
    return count


def check_prototypes(code):
    protos = {}
    # Declarations at file scope: RETURN NAME(PARAMS);
    for m in re.finditer(r"^([A-Za-z_][\w \*]*?)\s*\b(P?MPI_\w+)\s*\(([^;{]*?)\)\s*;", code,
                         flags=re.M):
        ret, name, params = m.group(1), m.group(2), m.group(3)
        if ret.strip().startswith("typedef"):
            continue
        def norm(text):
            return re.sub(r"\s*([*,])\s*", r"\1", re.sub(r"\s+", " ", text)).strip()

        if name in protos:
            fail(f"{name} is declared twice")
        protos[name] = (norm(ret), norm(params))
    pairs = 0
    for name, sig in protos.items():
        if name.startswith("PMPI_"):
            if name[1:] not in protos:
                fail(f"{name} has no MPI_ twin")
            continue
        if name.upper() == name:
            continue  # predefined callbacks (MPI_COMM_DUP_FN, ...) have no PMPI_ form
        twin = "P" + name
        if twin not in protos:
            fail(f"{name} has no {twin}")
        elif protos[twin] != sig:
            fail(f"{name} {sig} and {twin} {protos[twin]} differ")
        else:
            pairs += 1
    if pairs == 0:
        fail("mpi.h: no prototypes found")
    return pairs


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        header_text = f.read()
    with open(sys.argv[2], encoding="utf-8") as f:
        def_text = strip_comments(f.read())

    code = strip_comments(header_text)
    if "//" in code:
        fail("mpi.h: // comment or token outside a /* */ comment (not C89)")
    defines = read_defines(code)
    for macro in FOREIGN_MACROS:
        if macro in defines:
            fail(f"mpi.h defines {macro}, another implementation's macro")

    n_types = check_datatypes(defines, def_text)
    n_handles = check_handles(defines)
    n_functions = check_prototypes(code)

    for e in errors:
        print("FAIL:", e)
    print(f"check_abi: {n_types} datatypes, {n_handles} handle constants, "
          f"{n_functions} MPI_/PMPI_ function pairs: {'ok' if not errors else 'FAILED'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
