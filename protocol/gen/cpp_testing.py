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


# ---- files ------------------------------------------------------------------

TESTING_CHUNKS = 6

SAMPLES_H_DOC = """\
//
// testing/samples.h: test support, not part of the library.
//
// fill_sample() sets every field present in `version` to a non-default value
// (non-empty arrays, non-null nullables, unknown tagged fields in flexible
// versions). set_absent_field() gives the index-th top-level field that
// `version` lacks (non-ignorable ones, or ignorable ones when `ignorable`) a
// non-default value, and returns false when there is no such field.
//
// SampleMessage wraps any generated message behind one interface, so that
// generic checks are compiled once instead of once per message type; the
// per-type code is instantiated in the generated samples_N.cc files, next to
// the fillers. all_sample_types() lists every message type.""".split("\n")

INTERFACE = """\
class SampleMessage {
 public:
  virtual ~SampleMessage() = default;
  virtual void fill(int16_t version) = 0;
  virtual bool set_absent(int16_t version, int index, bool ignorable) = 0;
  // Adds an unknown tagged field; false when the type cannot carry any.
  virtual bool add_unknown_tag() = 0;
  virtual void encode(Writer& w, int16_t version) const = 0;
  virtual void decode(Reader& r, int16_t version) = 0;
  virtual size_t compute_size(int16_t version) const = 0;
  // Same type required.
  virtual bool equals(const SampleMessage& other) const = 0;
};

struct SampleType {
  std::string_view name;
  int16_t api_key;  // -1 for headers and internal records
  int16_t lowest_version;
  int16_t highest_version;
  int16_t first_flexible_version;  // -1: never flexible
  std::unique_ptr<SampleMessage> (*make)();
};

std::span<const SampleType> all_sample_types();
// nullptr when unknown.
const SampleType* find_sample_type(std::string_view name);""".split("\n")

ADAPTER = """\
template <class T>
class SampleOf final : public SampleMessage {
 public:
  void fill(int16_t v) override { fill_sample(x_, v); }
  bool set_absent(int16_t v, int i, bool ign) override { return set_absent_field(x_, v, i, ign); }
  bool add_unknown_tag() override {
    if constexpr (requires { x_.unknown_tagged_fields; }) {
      x_.unknown_tagged_fields.push_back(TaggedField{7, Bytes{1}});
      return true;
    }
    return false;
  }
  void encode(Writer& w, int16_t v) const override { x_.encode(w, v); }
  void decode(Reader& r, int16_t v) override { x_.decode(r, v); }
  size_t compute_size(int16_t v) const override { return x_.compute_size(v); }
  bool equals(const SampleMessage& o) const override {
    return x_ == static_cast<const SampleOf&>(o).x_;
  }

 private:
  T x_;
};

template <class T>
constexpr SampleType type_of(std::string_view name, int16_t api_key) {
  return SampleType{name, api_key, T::kLowestVersion, T::kHighestVersion,
                    T::kFirstFlexibleVersion,
                    [] { return std::unique_ptr<SampleMessage>(new SampleOf<T>()); }};
}""".split("\n")


def testing_files(groups, apis, banner, cmake_banner, namespace):
    files = {}
    all_msgs = [m for g in groups for m in g.messages]
    h = banner + SAMPLES_H_DOC + [
        "#pragma once", "", "#include <cstddef>", "#include <cstdint>", "#include <memory>",
        "#include <span>", "#include <string_view>", "",
        '#include "protocol/wire/reader.h"', '#include "protocol/wire/types.h"',
        '#include "protocol/wire/writer.h"', "", "namespace %s {" % namespace, ""]
    h += ["struct %s;" % m.name for m in all_msgs]
    h += ["", "}  // namespace %s" % namespace, "", "namespace %s::testing {" % namespace, ""]
    h += ["Uuid sample_uuid(int seed);", "// A few bytes standing for a record batch.",
          "Records sample_records();", ""]
    for m in all_msgs:
        h.append("void fill_sample(%s& x, int16_t version);" % m.name)
        h.append("bool set_absent_field(%s& x, int16_t version, int index, bool ignorable);"
                 % m.name)
    h += [""] + INTERFACE + [""]
    h += ["// The sample types of samples_N.cc."]
    h += ["std::span<const SampleType> sample_types_%d();" % i for i in range(TESTING_CHUNKS)]
    h += ["", "}  // namespace %s::testing" % namespace]
    files["testing/samples.h"] = h

    files["testing/sample_of.h"] = banner + [
        "//", "// testing/sample_of.h: SampleOf<T>, the one adapter from a generated message",
        "// type to SampleMessage, and type_of<T>(), its SampleType entry. Included by",
        "// every samples_N.cc; it includes samples.h, which declares the fillers it calls.",
        "#pragma once", "", "#include <memory>", "#include <string_view>", "",
        '#include "protocol/generated/testing/samples.h"', "",
        "namespace %s::testing {" % namespace, ""] + ADAPTER + [
        "", "}  // namespace %s::testing" % namespace]

    index = banner + [
        "//", "// testing/sample_values.cc: values shared by the sample fillers, and the",
        "// index of sample types.",
        '#include "protocol/generated/testing/samples.h"', "", "#include <vector>", "",
        "namespace %s::testing {" % namespace, "",
        "Uuid sample_uuid(int seed) {", "  Uuid u;",
        "  for (size_t i = 0; i < u.bytes.size(); ++i)",
        "    u.bytes[i] = static_cast<uint8_t>(seed * 16 + static_cast<int>(i) + 1);",
        "  return u;", "}", "",
        "Records sample_records() {",
        "  static const uint8_t kBatch[] = {0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 3, 0xCA, 0xFE, 0x42};",
        "  return Records(std::span<const uint8_t>(kBatch));", "}", "",
        "std::span<const SampleType> all_sample_types() {",
        "  static const std::vector<SampleType> kAll = [] {",
        "    std::vector<SampleType> all;",
        "    for (auto part : {%s}) {" % ", ".join(
            "sample_types_%d()" % i for i in range(TESTING_CHUNKS)),
        "      all.insert(all.end(), part.begin(), part.end());",
        "    }",
        "    return all;",
        "  }();",
        "  return kAll;", "}", "",
        "const SampleType* find_sample_type(std::string_view name) {",
        "  for (const SampleType& t : all_sample_types())",
        "    if (t.name == name) return &t;",
        "  return nullptr;", "}", "",
        "}  // namespace %s::testing" % namespace]
    files["testing/sample_values.cc"] = index
    sources = ["sample_values.cc"]
    # A few translation units rather than one per API: the fillers are small
    # and header parsing dominates their compile time.
    for i in range(TESTING_CHUNKS):
        chunk = sorted(groups[i::TESTING_CHUNKS], key=lambda g: g.stem)
        L = banner + ["//", "// testing/samples_%d.cc: sample fillers and sample types for %s."
                      % (i, ", ".join(g.stem for g in chunk)), ""]
        L += ['#include "protocol/generated/%s.h"' % g.stem for g in chunk]
        L += ['#include "protocol/generated/testing/sample_of.h"',
              '#include "protocol/generated/testing/samples.h"', "", "#include <memory>", "",
              "namespace %s::testing {" % namespace, ""]
        msgs = [m for g in chunk for m in g.messages]
        for m in msgs:
            L += ["// ---- %s" % m.name, ""]
            L += SampleEmitter(m).define()
        L += ["std::span<const SampleType> sample_types_%d() {" % i,
                        "  static constexpr SampleType kTypes[] = {"]
        L += ['      type_of<%s>("%s", %d),' % (m.name, m.name,
                                                 m.api_key if m.api_key is not None else -1)
              for m in msgs]
        L += ["  };", "  return kTypes;", "}", "", "}  // namespace %s::testing" % namespace]
        files["testing/samples_%d.cc" % i] = L
        sources.append("samples_%d.cc" % i)

    lst = banner + ["// testing/message_list.inc: X-macro list of every generated message.",
                    "// CK_API(key, Name, Request, Response) per API; CK_MESSAGE(Type) for the",
                    "// headers and the internal record schemas."]
    for key in sorted(apis):
        req = apis[key]["request"]
        lst.append("CK_API(%d, %s, %s, %s)" % (key, req.name[: -len("Request")], req.name,
                                              apis[key]["response"].name))
    for g in groups:
        for m in g.messages:
            if m.kind not in ("request", "response"):
                lst.append("CK_MESSAGE(%s)" % m.name)
    files["testing/message_list.inc"] = lst
    cm = cmake_banner + ["# Sources of the generated test support; tests list them in their target.",
                         "set(CK_GENERATED_TESTING_SOURCES"]
    cm += ["  ${CMAKE_CURRENT_LIST_DIR}/%s" % s for s in sources] + [")"]
    files["testing/sources.cmake"] = cm
    return files
