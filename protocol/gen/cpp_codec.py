# protocol/gen/cpp_codec.py: emits the C++ struct declarations and the
# encode / decode / compute_size definitions for one message.
#
# Every field becomes one or two lines calling Writer/Reader or the helpers
# in protocol/wire/codec_support.h; version tests are simplified against the
# versions a struct can be used in, so most fields need no test at all. The
# emitted code uses these names: parameters `w`, `r`, `version`; locals end
# in `_` so they cannot clash with members (which never do).
import re

from cpp_types import (MinSizer, base_type, both, compact_versions, cond, field_comment_lines,
                       member_init, member_type, negate, nondefault)

FIXED_WRITE = {
    "int8": "write_int8", "int16": "write_int16", "uint16": "write_uint16",
    "int32": "write_int32", "int64": "write_int64", "float64": "write_float64",
    "bool": "write_bool", "uuid": "write_uuid",
}
FIXED_READ = {k: v.replace("write_", "read_") for k, v in FIXED_WRITE.items()}
FIXED_SIZE = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8,
              "bool": 1, "uuid": 16}


def indent(lines, n=1):
    return ["  " * n + l if l else l for l in lines]


def guarded(c, lines):
    if c == "false" or not lines:
        return []
    if c == "true":
        return lines
    return ["if (%s) {" % c] + indent(lines) + ["}"]


class StructEmitter:
    def __init__(self, msg):
        self.msg = msg
        self.sizer = MinSizer(msg)

    # ---- declarations -------------------------------------------------

    def declare(self, s, is_top, constants):
        out = ["struct %s {" % s.name]
        body = list(constants)
        if is_top:
            for nested in self.msg.order:
                body += self.declare(nested, False, [])
                body.append("")
        for f in s.fields:
            body += field_comment_lines(f)
            body.append("%s %s%s;" % (member_type(f), f.cname, member_init(f)))
        if s.can_flex():
            body.append("// Tagged fields this codec does not know, kept to be re-emitted.")
            body.append("UnknownTaggedFields unknown_tagged_fields;")
        if s.fields or s.can_flex():
            body.append("")
        body += [
            "void encode(Writer& w, int16_t version) const;",
            "void decode(Reader& r, int16_t version);",
            "size_t compute_size(int16_t version) const;",
            "bool operator==(const %s&) const = default;" % s.name,
        ]
        out += indent(body)
        out.append("};")
        return out

    # ---- per-field statements -----------------------------------------

    def _flags(self, f, vctx):
        return cond(compact_versions(f), vctx), cond(f.nullable, vctx)

    def write(self, f, var, vctx, in_tag):
        t = f.type
        C, N = self._flags(f, vctx)
        k = t.kind
        if k in FIXED_WRITE:
            return ["w.%s(%s);" % (FIXED_WRITE[k], var)]
        if k in ("string", "bytes"):
            if f.is_nullable_type:
                return ["codec::write_nullable_%s(w, %s, %s, %s);" % (k, var, C, N)]
            return ["codec::write_%s(w, %s, %s);" % (k, var, C)]
        if k == "records":
            return ["codec::write_records(w, %s, %s, %s);" % (var, C, N)]
        if k == "struct":
            if not f.is_nullable_type:
                return ["%s.encode(w, version);" % var]
            null_mark = "w.write_uvarint(0);" if in_tag else "w.write_int8(-1);"
            some_mark = "w.write_uvarint(1);" if in_tag else "w.write_int8(1);"
            on_null = [null_mark] if N == "true" else (
                ["w.fail(WireError::kUnexpectedNull);"] if N == "false" else
                ["if (%s) {" % N, "  " + null_mark, "} else {",
                 "  w.fail(WireError::kUnexpectedNull);", "}"])
            return (["if (!%s) {" % var] + indent(on_null) + ["} else {"] +
                    indent(guarded(N, [some_mark]) + ["%s->encode(w, version);" % var]) + ["}"])
        # arrays
        e = t.elem.kind
        if e in FIXED_WRITE:
            elem = "w.%s(e_);" % FIXED_WRITE[e]
        elif e in ("string", "bytes"):
            elem = "codec::write_%s(w, e_, %s);" % (e, C)
        else:
            elem = "e_.encode(w, version);"

        def body(v):
            return ["codec::write_array_length(w, %s.size(), %s);" % (v, C),
                    "for (const auto& e_ : %s) %s" % (v, elem)]

        if not f.is_nullable_type:
            return body(var)
        return (["if (!%s) {" % var, "  codec::write_null_array(w, %s, %s);" % (C, N),
                 "} else {"] + indent(body("(*%s)" % var)) + ["}"])

    def read(self, f, var, rd, vctx, in_tag):
        t = f.type
        C, N = self._flags(f, vctx)
        k = t.kind
        if k in FIXED_READ:
            return ["%s = %s.%s();" % (var, rd, FIXED_READ[k])]
        if k in ("string", "bytes"):
            if f.is_nullable_type:
                return ["%s = codec::read_nullable_%s(%s, %s, %s);" % (var, k, rd, C, N)]
            return ["%s = codec::read_%s(%s, %s);" % (var, k, rd, C)]
        if k == "records":
            return ["%s = codec::read_records(%s, %s, %s);" % (var, rd, C, N)]
        if k == "struct":
            if not f.is_nullable_type:
                return ["%s.decode(%s, version);" % (var, rd)]
            # Not emplace(): clang rejects optional<Nested>::emplace() while the
            # enclosing struct's default member initializers are pending.
            present = ["%s = %s{};" % (var, t.struct_name), "%s->decode(%s, version);" % (var, rd)]
            test = ("%s.read_uvarint() == 0" if in_tag else "%s.read_int8() < 0") % rd
            marked = (["if (%s) {" % test, "  %s.reset();" % var, "} else {"] + indent(present) +
                      ["}"])
            if N == "true":
                return marked
            if N == "false":
                return present
            return ["if (%s) {" % N] + indent(marked) + ["} else {"] + indent(present) + ["}"]
        e = t.elem.kind
        if e in FIXED_READ:
            elem = "v_.push_back(%s.%s());" % (rd, FIXED_READ[e])
        elif e in ("string", "bytes"):
            elem = "v_.push_back(codec::read_%s(%s, %s));" % (e, rd, C)
        else:
            elem = "v_.emplace_back().decode(%s, version);" % rd
        min_size = self.sizer.element(f, vctx)
        nullable = N if f.is_nullable_type else "false"
        loop = ["if (codec::charge_elements(%s, v_, n_)) v_.reserve(static_cast<size_t>(n_));" % rd,
                "for (int32_t i_ = 0; i_ < n_ && %s.ok(); ++i_) %s" % (rd, elem)]
        lines = ["const int32_t n_ = codec::read_array_length(%s, %s, %s, %d);"
                 % (rd, C, nullable, min_size)]
        if f.is_nullable_type:
            lines += ["if (n_ < 0) {", "  %s.reset();" % var, "} else {",
                      "  auto& v_ = %s.emplace();" % var] + indent(loop) + ["}"]
        else:
            lines += ["auto& v_ = %s;" % var] + loop
        return ["{"] + indent(lines) + ["}"]

    def size(self, f, var, acc, vctx, in_tag):
        t = f.type
        C, N = self._flags(f, vctx)
        k = t.kind
        if k in FIXED_SIZE:
            return ["%s += %d;" % (acc, FIXED_SIZE[k])]
        if k in ("string", "bytes"):
            arg = var if k == "string" or f.is_nullable_type else var + ".size()"
            fn = ("nullable_%s_size" if f.is_nullable_type else "%s_size") % k
            return ["%s += codec::%s(%s, %s);" % (acc, fn, arg, C)]
        if k == "records":
            return ["%s += codec::records_size(%s, %s);" % (acc, var, C)]
        if k == "struct":
            if not f.is_nullable_type:
                return ["%s += %s.compute_size(version);" % (acc, var)]
            mark = {"true": "1 + ", "false": ""}.get(N, "(%s ? 1 : 0) + " % N)
            return ["%s += %s(%s ? %s->compute_size(version) : 0);" % (acc, mark, var, var)]
        e = t.elem.kind

        def body(v):
            lines = ["%s += codec::array_length_size(%s.size(), %s);" % (acc, v, C)]
            if e in FIXED_SIZE:
                lines.append("%s += %s.size() * %d;" % (acc, v, FIXED_SIZE[e]))
            elif e == "string":
                lines.append("for (const auto& e_ : %s) %s += codec::string_size(e_, %s);"
                             % (v, acc, C))
            elif e == "bytes":
                lines.append("for (const auto& e_ : %s) %s += codec::bytes_size(e_.size(), %s);"
                             % (v, acc, C))
            else:
                lines.append("for (const auto& e_ : %s) %s += e_.compute_size(version);"
                             % (v, acc))
            return lines

        if not f.is_nullable_type:
            return body(var)
        return (["if (!%s) {" % var, "  %s += codec::null_array_size(%s);" % (acc, C),
                 "} else {"] + indent(body("(*%s)" % var)) + ["}"])

    # ---- methods -------------------------------------------------------

    def _tagged(self, s):
        """(field, tagged-version condition, versions) for tags usable in s."""
        out = []
        for f in s.tagged_fields():
            vs = f.tagged.intersect(s.context)
            if not vs.empty():
                out.append((f, cond(f.tagged, s.context), vs))
        return out

    def encode(self, s, q, is_top):
        ctx = s.context
        L = []
        if is_top:
            L += ["if (version < kLowestVersion || version > kHighestVersion) {",
                  "  w.fail(WireError::kUnsupportedVersion);", "  return;", "}"]
        for f in s.fields:
            present = cond(f.versions, ctx)
            if not f.ignorable and present != "true":
                L.append("if (%s) w.fail(WireError::kFieldNotInVersion);"
                         % both(negate(present), nondefault(f, f.cname)))
            reg = f.regular_versions()
            L += guarded(cond(reg, ctx), self.write(f, f.cname, reg.intersect(ctx), False))
        if s.can_flex():
            flex = cond(self.msg.flexible, ctx)
            T = ["uint32_t k_ = 0;"] if self._tagged(s) else []
            for f, tc, _ in self._tagged(s):
                T.append("const bool t%d_ = %s;" % (f.tag, both(tc, nondefault(f, f.cname))))
                T.append("k_ += t%d_;" % f.tag)
            T.append("codec::TaggedWriter tw_(w, unknown_tagged_fields, %s);"
                     % ("k_" if self._tagged(s) else "0"))
            for f, _, vs in self._tagged(s):
                T += ["if (t%d_) {" % f.tag]
                T += indent(["size_t s_ = 0;"] + self.size(f, f.cname, "s_", vs, True) +
                            ["tw_.field(%d, s_);" % f.tag] + self.write(f, f.cname, vs, True))
                T.append("}")
            T.append("tw_.finish();")
            if flex == "true":
                L += ["{"] + indent(T) + ["}"]
            else:
                L += ["if (%s) {" % flex] + indent(T) + ["} else if (!unknown_tagged_fields.empty()) {",
                      "  w.fail(WireError::kFieldNotInVersion);", "}"]
        return self._method("void %s::encode(Writer& w, int16_t version) const" % q, L)

    def decode(self, s, q, is_top):
        ctx = s.context
        L = []
        if is_top:
            L += ["if (version < kLowestVersion || version > kHighestVersion) {",
                  "  r.fail(WireError::kUnsupportedVersion);", "  return;", "}"]
        if s.fields or s.can_flex():
            L.append("*this = %s{};" % s.name)
        for f in s.fields:
            reg = f.regular_versions()
            L += guarded(cond(reg, ctx), self.read(f, f.cname, "r", reg.intersect(ctx), False))
        if s.can_flex():
            flex = cond(self.msg.flexible, ctx)
            tagged = self._tagged(s)
            if not tagged:
                T = ["codec::read_unknown_tagged(r, unknown_tagged_fields);"]
            else:
                T = ["codec::TaggedReader tr_(r);", "codec::TaggedEntry e_;",
                     "while (tr_.next(e_)) {", "  Reader sub_ = tr_.sub(e_);", "  switch (e_.tag) {"]
                for f, tc, vs in tagged:
                    case = [] if tc == "true" else ["if (%s) break;" % negate(tc)]
                    case += self.read(f, f.cname, "sub_", vs, True)
                    case += ["tr_.finish_known(sub_);", "continue;"]
                    T += indent(["case %d: {" % f.tag] + indent(case) + ["}"], 2)
                T += ["    default:", "      break;", "  }",
                      "  codec::TaggedReader::keep_unknown(unknown_tagged_fields, e_);", "}"]
            L += guarded(flex, T) if flex != "true" else T
        return self._method("void %s::decode(Reader& r, int16_t version)" % q, L)

    def compute_size(self, s, q, is_top):
        ctx = s.context
        L = []
        if is_top:
            L += ["if (version < kLowestVersion || version > kHighestVersion) return 0;"]
        L.append("size_t n_ = 0;")
        for f in s.fields:
            reg = f.regular_versions()
            L += guarded(cond(reg, ctx), self.size(f, f.cname, "n_", reg.intersect(ctx), False))
        if s.can_flex():
            flex = cond(self.msg.flexible, ctx)
            T = ["uint32_t k_ = static_cast<uint32_t>(unknown_tagged_fields.size());",
                 "n_ += codec::unknown_tagged_size(unknown_tagged_fields);"]
            for f, tc, vs in self._tagged(s):
                T += ["if (%s) {" % both(tc, nondefault(f, f.cname))]
                T += indent(["size_t s_ = 0;"] + self.size(f, f.cname, "s_", vs, True) +
                            ["n_ += codec::tagged_header_size(%d, s_) + s_;" % f.tag, "++k_;"])
                T.append("}")
            T.append("n_ += Writer::uvarint_size(k_);")
            L += guarded(flex, T) if flex != "true" else ["{"] + indent(T) + ["}"]
        L.append("return n_;")
        return self._method("size_t %s::compute_size(int16_t version) const" % q, L)

    def _method(self, signature, body):
        text = "\n".join(body)
        for param in ("version", "w", "r"):
            if re.search(r"\b%s\b" % param, signature) and not re.search(r"\b%s\b" % param, text):
                signature = re.sub(r"(\w+[&]?) %s\)" % param, r"\1 /*%s*/)" % param, signature)
                signature = re.sub(r"(\w+[&]?) %s," % param, r"\1 /*%s*/," % param, signature)
        return [signature + " {"] + indent(body) + ["}", ""]

    def define_all(self):
        out = []
        for s in self.msg.all_structs():
            is_top = s is self.msg.top
            q = self.msg.name if is_top else "%s::%s" % (self.msg.name, s.name)
            out += self.encode(s, q, is_top)
            out += self.decode(s, q, is_top)
            out += self.compute_size(s, q, is_top)
        return out


def constants(msg):
    lines = []
    if msg.api_key is not None:
        lines.append("static constexpr int16_t kApiKey = %d;" % msg.api_key)
    lines += ["static constexpr int16_t kLowestVersion = %d;" % msg.valid.lo,
              "static constexpr int16_t kHighestVersion = %d;" % msg.valid.hi,
              "static constexpr int16_t kFirstFlexibleVersion = %d;" % msg.first_flexible(), ""]
    return lines


def declare_message(msg):
    return StructEmitter(msg).declare(msg.top, True, constants(msg))


def define_message(msg):
    return StructEmitter(msg).define_all()
