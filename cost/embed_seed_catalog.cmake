# Writes the seed catalog CSV (IN) into a C++ source (OUT) as one string literal, in chunks of
# raw-string literals short enough for every compiler. Run by cost/CMakeLists.txt at build time.
file(READ ${IN} _csv)
string(FIND "${_csv}" ")jobctl_csv\"" _bad)
if(NOT _bad EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )jobctl_csv\"")
endif()
set(_out "// Generated from cost/seed_catalog.csv by cost/embed_seed_catalog.cmake. Do not edit.\n")
string(APPEND _out "#include <string_view>\n\nnamespace jobctl::cost::detail {\n")
string(APPEND _out "extern const std::string_view kSeedCatalogCsv;\n")
string(APPEND _out "const std::string_view kSeedCatalogCsv = R\"jobctl_csv(${_csv})jobctl_csv\";\n")
string(APPEND _out "}  // namespace jobctl::cost::detail\n")
file(WRITE ${OUT}.tmp "${_out}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
