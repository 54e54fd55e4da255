# Writes a file (IN) into a C++ source (OUT) as `const std::string_view NAME` in namespace
# NAMESPACE: its bytes as a char array, so any size and any content compile cleanly under
# -Wpedantic (a string literal past 64 KiB would not). Run at build time by the CMakeLists that
# embed a file (cost/: the seed catalog; daemon/: docs/openapi.json), so the program reads no file.
#
#   cmake -DIN=file -DOUT=file.cpp -DNAMESPACE=jobctl::x -DNAME=kText -DSOURCE=repo/path -P embed_file.cmake
file(READ ${IN} _hex HEX)
string(LENGTH "${_hex}" _hex_length)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," _bytes "${_hex}")
math(EXPR _length "${_hex_length} / 2")
set(_out "// Generated from ${SOURCE} by cmake/embed_file.cmake. Do not edit.\n")
string(APPEND _out "#include <string_view>\n\nnamespace ${NAMESPACE} {\nnamespace {\n")
string(APPEND _out "const char kBytes[${_length} + 1] = {\n  ${_bytes}'\\0'};\n}  // namespace\n")
string(APPEND _out "extern const std::string_view ${NAME};\n")
string(APPEND _out "const std::string_view ${NAME}(kBytes, ${_length});\n")
string(APPEND _out "}  // namespace ${NAMESPACE}\n")
file(WRITE ${OUT}.tmp "${_out}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
