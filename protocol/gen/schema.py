# protocol/gen/schema.py: reads Kafka's JSON message schemas into a small
# model the C++ emitters walk.
#
# A schema file is JSON with `//` line comments. It declares one message
# (request, response, header, or an internal "data" record): its valid and
# flexible versions and a tree of fields. Structs are declared inline by a
# field with its own `fields`, or in `commonStructs`; every struct becomes a
# C++ struct nested (flat) in the message struct. Each struct gets the range
# of versions it can be used in (its "context"), which lets the emitters
# leave out version checks that are always true.
import json
import re

MAX_VERSION = 32767

PRIMITIVES = {
    # name: (C++ type, fixed size in bytes or None)
    "int8": ("int8_t", 1),
    "int16": ("int16_t", 2),
    "uint16": ("uint16_t", 2),
    "int32": ("int32_t", 4),
    "int64": ("int64_t", 8),
    "float64": ("double", 8),
    "bool": ("bool", 1),
    "uuid": ("Uuid", 16),
    "string": ("std::string", None),
    "bytes": ("Bytes", None),
    "records": ("Records", None),
}

CPP_KEYWORDS = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char8_t char16_t char32_t class compl concept const consteval constexpr constinit const_cast
continue co_await co_return co_yield decltype default delete do double dynamic_cast else enum
explicit export extern false float for friend goto if inline int long mutable namespace new
noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned using
virtual void volatile wchar_t while xor xor_eq""".split())

# Names the generated methods use for parameters, locals and members.
RESERVED_MEMBERS = {"encode", "decode", "compute_size", "unknown_tagged_fields", "version", "w",
                    "r"}
# Type names in scope inside the generated structs.
RESERVED_TYPES = {"Records", "Bytes", "Uuid", "Reader", "Writer", "TaggedField",
                  "UnknownTaggedFields", "WireError"}


class SchemaError(Exception):
    pass


class Versions:
    """An inclusive version range; empty when lo > hi."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    @staticmethod
    def parse(text):
        text = text.strip()
        if text == "none":
            return Versions.none()
        if text.endswith("+"):
            return Versions(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            lo, hi = text.split("-")
            return Versions(int(lo), int(hi))
        return Versions(int(text), int(text))

    @staticmethod
    def none():
        return Versions(1, 0)

    def empty(self):
        return self.lo > self.hi

    def intersect(self, o):
        return Versions(max(self.lo, o.lo), min(self.hi, o.hi))

    def hull(self, o):
        if self.empty():
            return o
        if o.empty():
            return self
        return Versions(min(self.lo, o.lo), max(self.hi, o.hi))

    def contains(self, v):
        return self.lo <= v <= self.hi

    def covers(self, o):
        return o.empty() or (self.lo <= o.lo and o.hi <= self.hi)

    def __eq__(self, o):
        return (self.empty() and o.empty()) or (self.lo, self.hi) == (o.lo, o.hi)

    def __repr__(self):
        return "none" if self.empty() else "%d-%d" % (self.lo, self.hi)


def snake_case(name):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    s = s.lower()
    if s in CPP_KEYWORDS or s in RESERVED_MEMBERS:
        s += "_"
    return s


class FieldType:
    """kind: a PRIMITIVES key, 'struct' or 'array' (then elem is set)."""

    def __init__(self, text):
        self.text = text
        self.elem = None
        self.struct_name = None
        if text.startswith("[]"):
            self.kind = "array"
            self.elem = FieldType(text[2:])
            if self.elem.kind == "array":
                raise SchemaError("nested arrays are not supported: " + text)
        elif text in PRIMITIVES:
            self.kind = text
        else:
            self.kind = "struct"
            self.struct_name = text

    def is_struct_like(self):
        return self.kind == "struct" or (self.kind == "array" and self.elem.kind == "struct")

    def struct_ref(self):
        return self.struct_name if self.kind == "struct" else self.elem.struct_name


class Field:
    def __init__(self, j, owner):
        self.name = j["name"]
        self.cname = snake_case(self.name)
        self.type = FieldType(j["type"])
        self.versions = Versions.parse(j["versions"])
        self.nullable = Versions.parse(j.get("nullableVersions", "none"))
        self.tagged = Versions.parse(j.get("taggedVersions", "none"))
        self.tag = int(j["tag"]) if "tag" in j else None
        flex = j.get("flexibleVersions")
        self.flex_override = Versions.parse(flex) if flex is not None else None
        self.ignorable = bool(j.get("ignorable", False))
        self.about = j.get("about", "")
        raw_default = j.get("default", None) if "default" in j else ""
        if raw_default is None:
            raw_default = "null"
        self.default = raw_default if isinstance(raw_default, str) else json.dumps(raw_default)
        self.owner = owner
        self.is_nullable_type = not self.nullable.empty()
        if self.is_nullable_type and self.type.kind not in ("string", "bytes", "records",
                                                             "array", "struct"):
            raise SchemaError("%s: type %s cannot be nullable" % (self.name, self.type.text))
        if not self.tagged.empty():
            if self.tag is None:
                raise SchemaError("%s: taggedVersions without tag" % self.name)
            if not self.versions.covers(self.tagged) or self.tagged.hi != MAX_VERSION:
                raise SchemaError("%s: bad taggedVersions" % self.name)
        if self.default == "null" and not self.is_nullable_type:
            raise SchemaError("%s: null default on a non-nullable field" % self.name)

    def regular_versions(self):
        """Versions where the field sits in the fixed part of the struct."""
        if self.tagged.empty():
            return self.versions
        return Versions(self.versions.lo, min(self.versions.hi, self.tagged.lo - 1))


class Struct:
    def __init__(self, name, fields_json, message):
        self.name = name
        self.message = message
        self.fields = []
        self.context = Versions.none()  # versions in which this struct is encoded
        for fj in fields_json:
            self.fields.append(Field(fj, self))
        names = [f.cname for f in self.fields]
        if len(set(names)) != len(names):
            raise SchemaError("%s: duplicate field names %s" % (name, names))
        tags = [f.tag for f in self.fields if f.tag is not None]
        if len(set(tags)) != len(tags):
            raise SchemaError("%s: duplicate tags" % name)

    def tagged_fields(self):
        return sorted((f for f in self.fields if f.tag is not None), key=lambda f: f.tag)

    def can_flex(self):
        return not self.context.intersect(self.message.flexible).empty()


def _strip_comments(text):
    return "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))


class Message:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            j = json.loads(_strip_comments(f.read()))
        self.name = j["name"]
        self.kind = j["type"]  # request | response | header | data
        self.api_key = j.get("apiKey")
        self.valid = Versions.parse(j["validVersions"])
        self.flexible = Versions.parse(j.get("flexibleVersions", "none"))
        self.structs = {}  # name -> Struct (nested)
        self.top = Struct(self.name, j["fields"], self)
        self.top.context = self.valid
        for cs in j.get("commonStructs", []):
            common = Struct(cs["name"], cs["fields"], self)
            self._add_struct(common)
            self._collect_inline(common, cs["fields"])
        self._collect_inline(self.top, j["fields"])
        self._check_names()
        self._assign_contexts(self.top)
        self.order = self._definition_order()

    def _add_struct(self, s):
        if s.name in self.structs:
            raise SchemaError("%s: struct %s declared twice" % (self.name, s.name))
        if s.name in RESERVED_TYPES or s.name == self.name:
            raise SchemaError("%s: struct name %s clashes" % (self.name, s.name))
        self.structs[s.name] = s

    def _collect_inline(self, struct, fields_json):
        for f, fj in zip(struct.fields, fields_json):
            if "fields" in fj:
                if not f.type.is_struct_like():
                    raise SchemaError("%s: fields on a non-struct" % f.name)
                s = Struct(f.type.struct_ref(), fj["fields"], self)
                self._add_struct(s)
                self._collect_inline(s, fj["fields"])

    def _check_names(self):
        for s in [self.top] + list(self.structs.values()):
            for f in s.fields:
                if f.type.is_struct_like() and f.type.struct_ref() not in self.structs:
                    raise SchemaError("%s: unknown struct %s" % (self.name, f.type.struct_ref()))

    def _assign_contexts(self, struct):
        for f in struct.fields:
            if not f.type.is_struct_like():
                continue
            child = self.structs[f.type.struct_ref()]
            ctx = f.versions.intersect(struct.context)
            new = child.context.hull(ctx)
            if new != child.context:
                child.context = new
                self._assign_contexts(child)

    def _definition_order(self):
        """Nested structs, dependencies first (C++ needs complete member types)."""
        order, seen = [], set()

        def visit(s):
            for f in s.fields:
                if f.type.is_struct_like():
                    child = self.structs[f.type.struct_ref()]
                    if child.name not in seen:
                        seen.add(child.name)
                        visit(child)
                        order.append(child)

        visit(self.top)
        for name in sorted(self.structs):  # declared but unused common structs
            if name not in seen:
                seen.add(name)
                s = self.structs[name]
                if s.context.empty():
                    s.context = self.valid
                visit(s)
                order.append(s)
        return order

    def all_structs(self):
        return self.order + [self.top]

    def first_flexible(self):
        return -1 if self.flexible.empty() else max(self.flexible.lo, self.valid.lo)
