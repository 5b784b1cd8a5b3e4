# protocol/gen/cpp_testing.py: emits test support for the round-trip tests:
# per message, fill_sample(x, version) sets every field present in that
# version to a non-default value (non-empty arrays, non-null nullables,
# unknown tagged fields in flexible versions), and set_absent_field() sets a
# field the version lacks, to check kFieldNotInVersion and ignorable drops.
#
# This code is compiled into the test binary only, never into the library.
import re
import zlib

from cpp_types import INT_RANGES, base_type, cond, negate, scalar_default
from cpp_codec import guarded, indent


def _seed(struct_name, field_name):
    return zlib.crc32(("%s.%s" % (struct_name, field_name)).encode()) % 97 + 1


def scalar_value(kind, seed, default_text):
    """A C++ literal of `kind` that differs from the default."""
    if kind == "bool":
        return "false" if default_text == "true" else "true"
    if kind == "float64":
        return "%s" % (seed + 0.5)
    base = {"int8": seed, "int16": 300 + seed, "uint16": 40000 + seed,
            "int32": 70000 + seed * 7, "int64": (1 << 33) + seed}[kind]
    lo, hi = INT_RANGES[kind]
    if str(base) == default_text or not lo <= base <= hi:
        base += 1
    return str(base) + ("LL" if kind == "int64" else "")


class SampleEmitter:
    def __init__(self, msg):
        self.msg = msg

    def element_value(self, kind, seed):
        if kind in INT_RANGES or kind in ("bool", "float64"):
            return "static_cast<%s>(%s)" % (
                {"int8": "int8_t", "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t",
                 "int64": "int64_t", "bool": "bool", "float64": "double"}[kind],
                scalar_value(kind, seed, ""))
        if kind == "uuid":
            return "sample_uuid(%d)" % seed
        if kind == "string":
            return "std::string(\"s%d\")" % seed
        if kind == "bytes":
            return "Bytes{0xB0, %d}" % seed
        raise AssertionError(kind)

    def assign(self, f, s, version_expr):
        """Statements giving field f a non-default value."""
        var = "x." + f.cname
        k = f.type.kind
        seed = _seed(s.name, f.name)
        if k in INT_RANGES or k in ("bool", "float64"):
            d = scalar_default(f)
            return ["%s = %s;" % (var, scalar_value(k, seed, d))]
        if k in ("uuid", "string", "bytes"):
            return ["%s = %s;" % (var, self.element_value(k, seed))]
        if k == "records":
            return ["%s = sample_records();" % var]
        if k == "struct":
            if f.is_nullable_type:  # not emplace(): see cpp_codec.py
                return ["%s = %s::%s{};" % (var, self.msg.name, f.type.struct_name),
                        "fill(*%s, %s);" % (var, version_expr)]
            return ["fill(%s, %s);" % (var, version_expr)]
        e = f.type.elem.kind
        vec = "%s.emplace()" % var if f.is_nullable_type else var
        if e == "struct":
            return ["fill(%s.emplace_back(), %s);" % (vec, version_expr)]
        return ["%s = %s{%s, %s};" % (var, base_type(f.type), self.element_value(e, seed),
                                     self.element_value(e, seed + 1))]

    def unknown_tags(self, s):
        known = {f.tag for f in s.fields if f.tag is not None}
        first = next(t for t in range(0, 10000) if t not in known)
        assert 5000 not in known
        return ("x.unknown_tagged_fields = {TaggedField{%d, Bytes{0xAB}}, "
                "TaggedField{5000, Bytes{1, 2, 3}}};" % first)

    def fill(self, s, fn):
        L = []
        for f in s.fields:
            L += guarded(cond(f.versions, s.context), self.assign(f, s, "version"))
        if s.can_flex():
            L += guarded(cond(self.msg.flexible, s.context), [self.unknown_tags(s)])
        text = "\n".join(L)
        vparam = "version" if re.search(r"\bversion\b", text) else "/*version*/"
        xparam = "x" if L else "/*x*/"
        q = self.msg.name if s is self.msg.top else "%s::%s" % (self.msg.name, s.name)
        return (["void %s(%s& %s, int16_t %s) {" % (fn, q, xparam, vparam)] + indent(L) +
                ["}", ""])

    def absent(self):
        s = self.msg.top
        L = []
        for ignorable in (False, True):
            body = []
            for f in s.fields:
                present = cond(f.versions, s.context)
                if present == "true" or f.ignorable != ignorable:
                    continue
                test = "i_++ == index" if present == "false" else "%s && i_++ == index" % negate(
                    present)
                body += ["if (%s) {" % test] + indent(
                    self.assign(f, s, str(f.versions.lo)) + ["return true;"]) + ["}"]
            if body:
                L += ["if (%signorable) {" % ("" if ignorable else "!")] + indent(body) + ["}"]
        if L:
            L = ["int i_ = 0;"] + L
        L.append("return false;")
        text = "\n".join(L)
        params = ["%s& %s" % (self.msg.name, "x" if "x." in text else "/*x*/"),
                  "int16_t %s" % ("version" if re.search(r"\bversion\b", text) else "/*version*/"),
                  "int %s" % ("index" if "index" in text else "/*index*/"),
                  "bool %s" % ("ignorable" if "ignorable)" in text else "/*ignorable*/")]
        return (["bool set_absent_field(%s) {" % ", ".join(params)] + indent(L) + ["}", ""])

    def define(self):
        out = ["namespace {", ""]
        for s in self.msg.order:
            out += self.fill(s, "fill")
        out += ["}  // namespace", ""]
        out += self.fill(self.msg.top, "fill_sample")
        out += self.absent()
        return out
