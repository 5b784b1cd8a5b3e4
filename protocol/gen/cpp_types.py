# protocol/gen/cpp_types.py: how schema fields map to C++: member types,
# default values, "is this field at its default" tests, version conditions
# and minimum encoded sizes.
#
# Shared by the codec emitter (cpp_codec.py) and the test-sample emitter
# (cpp_testing.py).
import json
import re
import textwrap

from schema import PRIMITIVES, SchemaError, Versions

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


def cond(vs, ctx):
    """C++ test that `version` lies in vs, given it lies in ctx."""
    i = vs.intersect(ctx)
    if i.empty():
        return "false"
    if i.lo == i.hi and i.lo > ctx.lo and i.hi < ctx.hi:
        return "version == %d" % i.lo
    parts = []
    if i.lo > ctx.lo:
        parts.append("version >= %d" % i.lo)
    if i.hi < ctx.hi:
        parts.append("version <= %d" % i.hi)
    return " && ".join(parts) if parts else "true"


_FLIP = {">=": "<", "<=": ">", "==": "!="}


def negate(c):
    if c == "true":
        return "false"
    if c == "false":
        return "true"
    m = re.fullmatch(r"version (>=|<=|==) (\d+)", c)
    if m:
        return "version %s %s" % (_FLIP[m.group(1)], m.group(2))
    return "!(%s)" % c


def _atom(c):
    return c if re.fullmatch(r"version [<>=!]+ \d+|[\w.]+\(\)|!?[\w.]+", c) else "(%s)" % c


def both(a, b):
    if a == "false" or b == "false":
        return "false"
    if a == "true":
        return b
    if b == "true":
        return a
    return "%s && %s" % (_atom(a), _atom(b))


def base_type(t):
    if t.kind == "array":
        return "std::vector<%s>" % base_type(t.elem)
    if t.kind == "struct":
        return t.struct_name
    return PRIMITIVES[t.kind][0]


def member_type(f):
    b = base_type(f.type)
    if f.is_nullable_type and f.type.kind != "records":
        return "std::optional<%s>" % b
    return b


def int_literal(kind, text):
    try:
        v = int(text, 0)
    except ValueError:
        raise SchemaError("bad %s default %r" % (kind, text))
    lo, hi = INT_RANGES[kind]
    if not lo <= v <= hi:
        raise SchemaError("%s default %r out of range" % (kind, text))
    if v == lo and kind in ("int32", "int64"):
        return "(%d - 1)" % (v + 1) if kind == "int32" else "(%dLL - 1)" % (v + 1)
    return str(v) + ("LL" if kind == "int64" and abs(v) > (1 << 31) else "")


def default_is_null(f):
    return f.default == "null"


def scalar_default(f):
    """C++ expression of a scalar field's default."""
    k = f.type.kind
    d = f.default
    if k in INT_RANGES:
        return int_literal(k, d or "0")
    if k == "bool":
        if d.lower() not in ("", "true", "false"):
            raise SchemaError("bad bool default %r" % d)
        return "true" if d.lower() == "true" else "false"
    if k == "float64":
        return repr(float(d or "0"))
    raise AssertionError(k)


def cpp_string(s):
    return json.dumps(s)


def member_init(f):
    """The ` = ...` part of a member declaration ('' when value-init is right)."""
    k = f.type.kind
    d = f.default
    if k in INT_RANGES or k in ("bool", "float64"):
        return " = " + scalar_default(f)
    if k == "uuid":
        if d not in ("", "AAAAAAAAAAAAAAAAAAAAAA"):
            raise SchemaError("%s: unsupported uuid default %r" % (f.name, d))
        return ""
    if k == "string":
        if d == "null" or (d == "" and not f.is_nullable_type):
            return ""
        return " = std::string(%s)" % (cpp_string(d) if d else "")
    if k == "records":
        return " = Records::make_null()" if d == "null" else ""
    if d not in ("", "null"):
        raise SchemaError("%s: unsupported default %r for %s" % (f.name, d, f.type.text))
    if f.is_nullable_type and d != "null":
        return " = %s()" % base_type(f.type)  # nullable but non-null by default
    return ""


def nondefault(f, var):
    """C++ test that `var` differs from the field's default (Kafka's rule for
    writing a tagged field and for refusing an absent one)."""
    k = f.type.kind
    if k in INT_RANGES or k in ("bool", "float64"):
        return "%s != %s" % (var, scalar_default(f))
    if k == "uuid":
        return "!%s.is_zero()" % var
    if k == "records":
        return "!%s.null" % var if default_is_null(f) else "(%s.null || %s.size() != 0)" % (
            var, var)
    if f.is_nullable_type and default_is_null(f):
        return "%s.has_value()" % var
    if k == "string":
        test = "!%s.empty()" if f.default == "" else "%%s != %s" % cpp_string(f.default)
    elif k in ("bytes", "array"):
        test = "!%s.empty()"
    elif k == "struct":
        test = "!(%%s == %s{})" % f.type.struct_name
    else:
        raise AssertionError(k)
    if f.is_nullable_type:
        return "(!%s || %s)" % (var, test % ("(*%s)" % var))
    return test % var


def compact_versions(f):
    msg = f.owner.message
    return f.flex_override if f.flex_override is not None else msg.flexible


class MinSizer:
    """Smallest encoding of a struct in a version, so that array decoding can
    reject forged counts before allocating."""

    def __init__(self, msg):
        self.msg = msg
        self.memo = {}

    def field(self, f, v):
        t = f.type
        compact = compact_versions(f).contains(v)
        if t.kind in PRIMITIVES and PRIMITIVES[t.kind][1] is not None:
            return PRIMITIVES[t.kind][1]
        if t.kind == "string":
            return 1 if compact else 2
        if t.kind in ("bytes", "records", "array"):
            return 1 if compact else 4
        if f.nullable.contains(v):
            return 1
        return self.struct(self.msg.structs[t.struct_name], v)

    def struct(self, s, v):
        key = (s.name, v)
        if key not in self.memo:
            self.memo[key] = 0  # recursion guard
            n = 1 if self.msg.flexible.contains(v) else 0
            for f in s.fields:
                if f.regular_versions().contains(v):
                    n += self.field(f, v)
            self.memo[key] = n
        return self.memo[key]

    def element(self, f, ctx):
        """Minimum size of one element of array field f over versions ctx."""
        vs = f.versions.intersect(ctx)
        e = f.type.elem
        best = None
        for v in range(vs.lo, min(vs.hi, self.msg.valid.hi) + 1):
            compact = compact_versions(f).contains(v)
            if e.kind in PRIMITIVES and PRIMITIVES[e.kind][1] is not None:
                n = PRIMITIVES[e.kind][1]
            elif e.kind == "string":
                n = 1 if compact else 2
            elif e.kind == "bytes":
                n = 1 if compact else 4
            else:
                n = self.struct(self.msg.structs[e.struct_name], v)
            best = n if best is None else min(best, n)
        return max(1, best or 1)


def field_comment_lines(f, width=96):
    return ["// " + l for l in textwrap.wrap(field_comment(f), width)]


def field_comment(f):
    bits = ["v%s" % _range_text(f.versions)]
    if not f.nullable.empty():
        bits.append("nullable v%s" % _range_text(f.nullable))
    if f.tag is not None:
        bits.append("tag %d" % f.tag)
    if f.ignorable:
        bits.append("ignorable")
    about = " ".join(f.about.split())
    return ("%s [%s]" % (about, ", ".join(bits))).strip()


def _range_text(vs):
    if vs.empty():
        return "none"
    if vs.hi >= 32767:
        return "%d+" % vs.lo
    if vs.lo == vs.hi:
        return str(vs.lo)
    return "%d-%d" % (vs.lo, vs.hi)


def all_versions():
    return Versions(0, 32767)
