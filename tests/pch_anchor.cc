// tests/pch_anchor.cc: the one source of the targets that build the tests'
// precompiled headers (tests/CMakeLists.txt, CK_PCH); it has no code.
