#!/usr/bin/env python3
"""Writes the Fortran bindings of ulmpi from routines.txt and include/mpi.h.

    gen_bindings.py ROUTINES MPI_H OUT_CPP OUT_MPIF_H OUT_MODULE

OUT_CPP     the C++ entry points: pmpi_name_ calling PMPI_Name, each with
            the weak aliases mpi_name_, mpi_name, mpi_name__, pmpi_name,
            pmpi_name__ (gfortran's mangling and the other usual ones)
OUT_MPIF_H  mpif.h: the constants, the sentinels' common blocks, the types
            of the MPI functions; valid fixed and free form
OUT_MODULE  mpi.f90: module mpi, the same constants plus an explicit
            interface for every routine (choice buffers through gfortran's
            NO_ARG_CHECK, so any type and rank may be passed)

The integer constants are those of mpi.h (every #define of an MPI_ name to an
integer or to another such name), so C and Fortran cannot disagree. A row of
routines.txt whose PMPI_ function mpi.h does not declare is left out.
"""

import re
import sys

# ---------------------------------------------------------------- reading


def read_c_prototypes(text):
    """{Name: [C parameter types]} of the PMPI_ functions mpi.h declares."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    protos = {}
    for m in re.finditer(r"^[A-Za-z_][\w ]*?\bPMPI_(\w+)\s*\(([^;]*?)\)\s*;", text, re.M):
        params = " ".join(m.group(2).split())
        if params in ("", "void"):
            types = []
        else:
            types = [p.strip() for p in params.split(",") if p.strip() != "..."]
        protos[m.group(1)] = types
    return protos


def read_c_constants(text):
    """[(NAME, value)] of the integer constants of mpi.h, in order."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    values = {}
    order = []
    for m in re.finditer(r"^#define\s+(MPI_\w+)\s+(.+?)\s*$", text, re.M):
        name, val = m.group(1), m.group(2).strip()
        if name.startswith("MPI_F_") or name.startswith("MPI_F08_"):
            continue  # C-side views of Fortran statuses
        v = None
        lit = re.fullmatch(r"\(?\s*(-?)\s*(0x[0-9a-fA-F]+|\d+)\s*\)?", val)
        if lit:
            v = int(lit.group(2), 0) * (-1 if lit.group(1) else 1)
        elif val in values:
            v = values[val]
        if v is None:
            continue
        values[name] = v
        order.append((name, v))
    return order


class Arg:
    def __init__(self, spec):
        name, _, kind = spec.partition(":")
        self.name = name
        self.kind, _, self.param = kind.partition("=")
        if not self.kind:
            raise ValueError("argument without a kind: " + spec)


class Routine:
    def __init__(self, line, lineno):
        words = line.split()
        self.name = words[0]
        self.flags = {w[1:] for w in words[1:] if w.startswith("@")}
        self.args = [Arg(w) for w in words[1:] if not w.startswith("@")]
        self.lineno = lineno
        self.ierror = "noierr" not in self.flags
        self.result = "double" if "double" in self.flags else (
            "aint" if "aint" in self.flags else None)


def read_routines(path):
    out = []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if line:
                out.append(Routine(line, n))
    return out


# ---------------------------------------------------------------- C++

ADDR = "integer(kind=MPI_ADDRESS_KIND)"
COUNT = "integer(kind=MPI_COUNT_KIND)"
STATUS = "integer, intent(%s) :: {n}(MPI_STATUS_SIZE)"
# Every argument kind (see routines.txt): the C++ parameter (a pointer to
# the Fortran argument), the C function's argument made of it ({n}: the
# name, {t}: the C parameter type), and the Fortran declaration.
KINDS = {
    "i": ("const MPI_Fint*", "*{n}", "integer, intent(in) :: {n}"),
    "io": ("MPI_Fint*", "{n}", "integer, intent(out) :: {n}"),
    "iio": ("MPI_Fint*", "{n}", "integer, intent(inout) :: {n}"),
    "ia": ("const MPI_Fint*", "{n}", "integer, intent(in) :: {n}(*)"),
    "iao": ("MPI_Fint*", "{n}", "integer, intent(out) :: {n}(*)"),
    "iaio": ("MPI_Fint*", "{n}", "integer, intent(inout) :: {n}(*)"),
    "range": ("MPI_Fint*", "reinterpret_cast<int(*)[3]>({n})", "integer, intent(in) :: {n}(3, *)"),
    "w": ("const MPI_Fint*", "ulmpi::fortran::weights({n})", "integer, intent(in) :: {n}(*)"),
    # no intent: MPI_UNWEIGHTED may be given for both weights arguments
    "wo": ("MPI_Fint*", "ulmpi::fortran::weights({n})", "integer :: {n}(*)"),
    "l": ("const MPI_Fint*", "(*{n} != 0)", "logical, intent(in) :: {n}"),
    "lo": ("MPI_Fint*", "{n}", "logical, intent(out) :: {n}"),
    "la": ("const MPI_Fint*", "{n}", "logical, intent(in) :: {n}(*)"),
    "lao": ("MPI_Fint*", "{n}", "logical, intent(out) :: {n}(*)"),
    "a": ("const MPI_Aint*", "*{n}", ADDR + ", intent(in) :: {n}"),
    "ao": ("MPI_Aint*", "{n}", ADDR + ", intent(out) :: {n}"),
    "aio": ("MPI_Aint*", "{n}", ADDR + ", intent(inout) :: {n}"),
    "aa": ("const MPI_Aint*", "{n}", ADDR + ", intent(in) :: {n}(*)"),
    "aao": ("MPI_Aint*", "{n}", ADDR + ", intent(out) :: {n}(*)"),
    "c": ("const MPI_Count*", "*{n}", COUNT + ", intent(in) :: {n}"),
    "co": ("MPI_Count*", "{n}", COUNT + ", intent(out) :: {n}"),
    "av": ("const MPI_Aint*", "reinterpret_cast<void*>(*{n})", ADDR + ", intent(in) :: {n}"),
    "iv": ("const MPI_Fint*", "reinterpret_cast<void*>(static_cast<MPI_Aint>(*{n}))",
           "integer, intent(in) :: {n}"),
    "ao4": ("MPI_Fint*", "&{n}_aint", "integer, intent(out) :: {n}"),
    "ia4": ("const MPI_Fint*", "{n}_aint.data()", "integer, intent(in) :: {n}(*)"),
    "b": ("void*", "ulmpi::fortran::buffer({n})", "type(*), dimension(*) :: {n}"),
    "st": ("MPI_Fint*", "ulmpi::fortran::status({n})", STATUS % "out"),
    "sti": ("const MPI_Fint*", "reinterpret_cast<const MPI_Status*>({n})", STATUS % "in"),
    "stio": ("MPI_Fint*", "reinterpret_cast<MPI_Status*>({n})", STATUS % "inout"),
    "sts": ("MPI_Fint*", "ulmpi::fortran::statuses({n})",
            "integer, intent(out) :: {n}(MPI_STATUS_SIZE, *)"),
    "s": ("const char*", "{n}_c.c_str()", "character(len=*), intent(in) :: {n}"),
    "sk": ("const char*", "{n}_c.c_str()", "character(len=*), intent(in) :: {n}"),
    "so": ("char*", "{n}_c", "character(len=*), intent(out) :: {n}"),
    # @hand only: CHARACTER(*) arrays (MPI_COMM_SPAWN's argv; spawn_multiple's
    # commands and its (count, *) argv)
    "sa": ("const char*", "{n}", "character(len=*), intent(in) :: {n}(*)"),
    "sa2": ("const char*", "{n}", "character(len=*), intent(in) :: {n}(count, *)"),
    "idx": ("MPI_Fint*", "{n}", "integer, intent(out) :: {n}"),
    "idxa": ("MPI_Fint*", "{n}", "integer, intent(out) :: {n}(*)"),
    "fn": ("ulmpi::fortran::Procedure", "reinterpret_cast<{t}>({n})", "external :: {n}"),
}
STRING_KINDS = {"s", "sk", "so"}


def cpp_call_arg(a, ctype):
    return KINDS[a.kind][1].format(n=a.name, t=ctype)


def cpp_routine(r, ctypes):
    lower = r.name.lower()
    params = ["%s %s" % (KINDS[a.kind][0], a.name) for a in r.args]
    if r.ierror:
        params.append("MPI_Fint* ierr")
    params += ["std::size_t %s_len" % a.name for a in r.args if a.kind in STRING_KINDS]
    pre, post = [], []
    throws = False
    for a in r.args:
        k, n = a.kind, a.name
        if k == "s":
            pre.append("const std::string %s_c = ulmpi::fortran::trimmed(%s, %s_len, false);"
                       % (n, n, n))
            throws = True
        elif k == "sk":
            pre.append("const std::string %s_c = ulmpi::fortran::trimmed(%s, %s_len, true);"
                       % (n, n, n))
            throws = True
        elif k == "so":
            pre.append("char %s_c[%s] = {};" % (n, a.param))
            post.append("ulmpi::fortran::copy_out(%s, %s_len, %s_c);" % (n, n, n))
        elif k == "ao4":
            pre.append("MPI_Aint %s_aint = 0;" % n)
            post.append("if (rc == MPI_SUCCESS) {")
            post.append('    rc = ulmpi::fortran::narrow(%s_aint, %s, "MPI_%s");' % (n, n, r.name))
            post.append("}")
        elif k == "ia4":
            pre.append("const std::vector<MPI_Aint> %s_aint = ulmpi::fortran::widen(%s, *%s);"
                       % (n, n, a.param))
            throws = True
        elif k == "lo":
            post.append("*%s = *%s != 0;" % (n, n))
        elif k == "idx":
            post.append("if (rc == MPI_SUCCESS) {")
            post.append("    ulmpi::fortran::one_based(%s, 1);" % n)
            post.append("}")
        elif k == "idxa":
            post.append("if (rc == MPI_SUCCESS) {")
            post.append("    ulmpi::fortran::one_based(%s, *%s);" % (n, a.param))
            post.append("}")
    call = "PMPI_%s(%s)" % (r.name, ", ".join(
        cpp_call_arg(a, t) for a, t in zip(r.args, ctypes)))
    ret = {"double": "double", "aint": "MPI_Aint", None: "void"}[r.result]
    lines = ['extern "C" %s pmpi_%s_(%s)' % (ret, lower, ", ".join(params))]
    body = list(pre)
    if r.result:
        body.append("return %s;" % call)
    elif not r.ierror:
        body.append("(void)%s;" % call)
    elif post:
        body.append("int rc = %s;" % call)
        body += post
        body.append("*ierr = rc;")
    else:
        body.append("*ierr = %s;" % call)
    if throws:
        lines[0] += " try"
    lines.append("{")
    lines += ["    " + b for b in body]
    lines.append("}")
    if throws:
        lines.append("catch (...) {")
        lines.append('    *ierr = ulmpi::fortran::failed("MPI_%s");' % r.name)
        lines.append("}")
    lines.append("ULMPI_F_ALIASES(%s)" % lower)
    return "\n".join(lines)


def check_arity(r, ctypes):
    if len(ctypes) != len(r.args):
        raise SystemExit("routines.txt:%d: MPI_%s has %d arguments in the table, %d in mpi.h"
                         % (r.lineno, r.name, len(r.args), len(ctypes)))
    names = {a.name for a in r.args}
    for a in r.args:
        if a.kind not in KINDS:
            raise SystemExit("routines.txt:%d: unknown kind %s" % (r.lineno, a.kind))
        if a.kind in ("ia4", "idxa") and a.param not in names:
            raise SystemExit("routines.txt:%d: %s=%s names no argument"
                             % (r.lineno, a.kind, a.param))
        if a.kind == "so" and not a.param:
            raise SystemExit("routines.txt:%d: so needs a capacity" % r.lineno)


def write_cpp(path, routines, protos):
    out = [
        "// Generated by mpi/fortran/gen_bindings.py from mpi/fortran/routines.txt:",
        "// edit those, not this file.",
        '#include "mpi/fortran/fortran.h"',
        "",
        "#include <string>",
        "#include <vector>",
        "",
        "#pragma GCC visibility push(default)",
        "",
    ]
    for r in routines:
        if "hand" in r.flags:
            continue
        ctypes = protos[r.name]
        check_arity(r, ctypes)
        out.append(cpp_routine(r, ctypes))
        out.append("")
    # MPI_SIZEOF's specific procedures: x is a descriptor (assumed rank),
    # a CHARACTER adds its length after ierror; neither is looked at.
    for name, _, size in F_SIZEOF:
        lower = "sizeof_" + name.lower()
        out.append('extern "C" void pmpi_%s_(const void*, MPI_Fint* size, MPI_Fint* ierr)' % lower)
        out.append("{")
        out.append("    *size = %d;" % size)
        out.append("    *ierr = MPI_SUCCESS;")
        out.append("}")
        out.append("ULMPI_F_ALIASES(%s)" % lower)
        out.append("")
    out.append("#pragma GCC visibility pop")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ---------------------------------------------------------------- Fortran

# Fortran-only constants (the rest comes from mpi.h).
F_CONSTANTS = [
    ("MPI_STATUS_SIZE", 5),  # = MPI_F_STATUS_SIZE of mpi.h
    ("MPI_SOURCE", 1), ("MPI_TAG", 2), ("MPI_ERROR", 3),  # 1-based status indexes
    ("MPI_INTEGER_KIND", 4), ("MPI_ADDRESS_KIND", 8), ("MPI_OFFSET_KIND", 8),
    ("MPI_COUNT_KIND", 8),
]

# Sentinels: common blocks whose addresses the C side recognises
# (mpi/fortran/sentinels.cpp defines them).
F_SENTINELS = [
    ("MPI_BOTTOM", "", "mpi_fortran_bottom"),
    ("MPI_IN_PLACE", "", "mpi_fortran_in_place"),
    ("MPI_STATUS_IGNORE", "(MPI_STATUS_SIZE)", "mpi_fortran_status_ignore"),
    ("MPI_STATUSES_IGNORE", "(MPI_STATUS_SIZE, 1)", "mpi_fortran_statuses_ignore"),
    ("MPI_ERRCODES_IGNORE", "(1)", "mpi_fortran_errcodes_ignore"),
    ("MPI_UNWEIGHTED", "(1)", "mpi_fortran_unweighted"),
    ("MPI_WEIGHTS_EMPTY", "(1)", "mpi_fortran_weights_empty"),
    ("MPI_ARGV_NULL", "(1)", "mpi_fortran_argv_null", "character"),
    ("MPI_ARGVS_NULL", "(1, 1)", "mpi_fortran_argvs_null", "character"),
]

# MPI_SIZEOF (module only: a generic name): one specific procedure per
# type and kind, any rank (assumed rank), answering the size of one element.
F_SIZEOF = [
    ("INTEGER1", "integer(kind=1)", 1), ("INTEGER2", "integer(kind=2)", 2),
    ("INTEGER4", "integer(kind=4)", 4), ("INTEGER8", "integer(kind=8)", 8),
    ("REAL4", "real(kind=4)", 4), ("REAL8", "real(kind=8)", 8),
    ("COMPLEX8", "complex(kind=4)", 8), ("COMPLEX16", "complex(kind=8)", 16),
    ("LOGICAL1", "logical(kind=1)", 1), ("LOGICAL2", "logical(kind=2)", 2),
    ("LOGICAL4", "logical(kind=4)", 4), ("LOGICAL8", "logical(kind=8)", 8),
    ("CHARACTER", "character(len=*)", 1),
]

# Predefined callbacks (procedures the program passes by name).
F_CALLBACKS = [
    "MPI_NULL_COPY_FN", "MPI_NULL_DELETE_FN", "MPI_DUP_FN",
    "MPI_COMM_NULL_COPY_FN", "MPI_COMM_NULL_DELETE_FN", "MPI_COMM_DUP_FN",
    "MPI_TYPE_NULL_COPY_FN", "MPI_TYPE_NULL_DELETE_FN", "MPI_TYPE_DUP_FN",
]


def constants(c_consts):
    seen = {}
    out = []
    for name, v in F_CONSTANTS + c_consts:
        key = name.upper()
        if key in seen:
            if seen[key] != v:
                raise SystemExit("constant %s defined twice with different values" % name)
            continue
        seen[key] = v
        out.append((name, v))
    return out


def write_mpif_h(path, consts, routines):
    L = [
        "! mpif.h -- the Fortran interface of ulmpi (include 'mpif.h').",
        "! Generated by mpi/fortran/gen_bindings.py from include/mpi.h and",
        "! mpi/fortran/routines.txt: edit those, not this file.",
        "! Valid fixed and free form: nothing before column 7, nothing past 72.",
        "! The routines have implicit interfaces here; `use mpi` checks them.",
    ]
    for name, v in consts:
        L.append("      integer %s" % name)
        L.append("      parameter (%s=%d)" % (name, v))
    for name, dims, common, *ftype in F_SENTINELS:
        L.append("      %s %s%s" % ((ftype or ["integer"])[0], name, dims.replace(" ", "")))
        L.append("      common /%s/ %s" % (common, name))
        L.append("      save /%s/" % common)
    for cb in F_CALLBACKS:
        L.append("      external %s" % cb)
    # The functions (as Open MPI's and MPICH's mpif.h declare them).
    for r in routines:
        if r.result:
            ftype = {"double": "double precision",
                     "aint": "integer(kind=MPI_ADDRESS_KIND)"}[r.result]
            for prefix in ("MPI", "PMPI"):
                L.append("      external %s_%s" % (prefix, r.name.upper()))
                L.append("      %s %s_%s" % (ftype, prefix, r.name.upper()))
    for line in L:
        if len(line) > 72:
            raise SystemExit("mpif.h line longer than 72 columns: " + line)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def f_interface(prefix, r):
    name = "%s_%s" % (prefix, r.name.upper())
    dummies = [a.name for a in r.args] + (["ierror"] if r.ierror else [])
    head = {"double": "double precision function", "aint": ADDR + " function",
            None: "subroutine"}[r.result]
    end = "end function" if r.result else "end subroutine"
    L = ["    %s %s(%s)" % (head, name, ", ".join(dummies))]
    need = set()
    for a in r.args:
        decl = KINDS[a.kind][2]
        for const in ("MPI_ADDRESS_KIND", "MPI_COUNT_KIND", "MPI_STATUS_SIZE"):
            if const in decl:
                need.add(const)
    if r.result == "aint":
        need.add("MPI_ADDRESS_KIND")
    if need:
        L.append("      import :: %s" % ", ".join(sorted(need)))
    L.append("      implicit none")
    for a in r.args:
        if a.kind == "b":
            L.append("      !GCC$ ATTRIBUTES NO_ARG_CHECK :: %s" % a.name)
        L.append("      " + KINDS[a.kind][2].format(n=a.name))
    if r.ierror:
        L.append("      integer, intent(out) :: ierror")
    L.append("    " + end)
    return L


def wrap_free_form(line, width=100):
    """Splits a long free-form line at commas with & continuations."""
    if len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip()) + 4
    out, cur = [], line
    while len(cur) > width:
        cut = cur.rfind(", ", 0, width - 2)
        if cut <= indent:
            break
        out.append(cur[:cut + 1] + " &")
        cur = " " * indent + cur[cut + 2:]
    out.append(cur)
    return out


def write_module(path, consts, routines):
    L = [
        "! mpi.f90 -- module mpi of ulmpi (`use mpi`).",
        "! Generated by mpi/fortran/gen_bindings.py from include/mpi.h and",
        "! mpi/fortran/routines.txt: edit those, not this file.",
        "! Constants and sentinels as in mpif.h, and an explicit interface for",
        "! every routine; choice buffers take any type and rank (gfortran's",
        "! NO_ARG_CHECK).",
        "module mpi",
        "  implicit none",
        "  public",
    ]
    for name, v in consts:
        L.append("  integer, parameter :: %s = %d" % (name, v))
    for name, dims, common, *ftype in F_SENTINELS:
        L.append("  %s :: %s%s" % ((ftype or ["integer"])[0], name, dims))
        L.append("  common /%s/ %s" % (common, name))
    L.append("  external :: %s" % ", ".join(F_CALLBACKS[:3]))
    L.append("  external :: %s" % ", ".join(F_CALLBACKS[3:6]))
    L.append("  external :: %s" % ", ".join(F_CALLBACKS[6:]))
    L.append("  interface")
    for r in routines:
        for prefix in ("MPI", "PMPI"):
            for line in f_interface(prefix, r):
                L += wrap_free_form(line)
    L.append("  end interface")
    for prefix in ("MPI", "PMPI"):
        L.append("  interface %s_SIZEOF" % prefix)
        for name, ftype, _ in F_SIZEOF:
            L.append("    subroutine %s_SIZEOF_%s(x, size, ierror)" % (prefix, name))
            L.append("      implicit none")
            L.append("      %s, dimension(..), intent(in) :: x" % ftype)
            L.append("      integer, intent(out) :: size, ierror")
            L.append("    end subroutine")
        L.append("  end interface")
    L.append("end module mpi")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


# ---------------------------------------------------------------- main


def main(argv):
    if len(argv) != 6:
        raise SystemExit(__doc__)
    routines_path, mpi_h, out_cpp, out_mpif, out_mod = argv[1:]
    text = open(mpi_h).read()
    protos = read_c_prototypes(text)
    routines = [r for r in read_routines(routines_path)
                if r.name in protos or "fortran" in r.flags]
    consts = constants(read_c_constants(text))
    write_cpp(out_cpp, routines, protos)
    write_mpif_h(out_mpif, consts, routines)
    write_module(out_mod, consts, routines)


if __name__ == "__main__":
    main(sys.argv)
