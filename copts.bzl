"""Compiler flags for gearbox's own code (third-party code is built without them)."""

GEARBOX_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-missing-field-initializers",
]
