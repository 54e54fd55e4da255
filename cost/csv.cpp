#include "cost/csv.h"

namespace jobctl::cost {

Expected<std::vector<CsvRow>> parse_csv(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<CsvRow> rows;
  size_t i = 0;
  int line = 1;
  const size_t n = text.size();
  while (i < n) {
    // Start of a record.
    if (text[i] == '\n' || text[i] == '\r') {  // blank line
      if (text[i] == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
      ++i;
      ++line;
      continue;
    }
    if (text[i] == '#') {  // comment line
      while (i < n && text[i] != '\n') ++i;
      if (i < n) ++i;
      ++line;
      continue;
    }
    CsvRow row;
    row.line = line;
    std::string field;
    bool end_of_record = false;
    while (!end_of_record) {
      field.clear();
      if (i < n && text[i] == '"') {
        ++i;
        bool closed = false;
        while (i < n) {
          char c = text[i];
          if (c == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field.push_back('"');
              i += 2;
              continue;
            }
            ++i;
            closed = true;
            break;
          }
          if (c == '\n') ++line;
          field.push_back(c);
          ++i;
        }
        if (!closed)
          return make_error(ErrorCode::malformed_csv,
                            "unterminated quoted field starting on line " + std::to_string(row.line));
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          return make_error(ErrorCode::malformed_csv,
                            "text after a closing quote on line " + std::to_string(line));
      } else {
        while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') field.push_back(text[i++]);
      }
      row.fields.push_back(field);
      if (i >= n) {
        end_of_record = true;
      } else if (text[i] == ',') {
        ++i;
      } else {  // line end
        if (text[i] == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
        ++i;
        ++line;
        end_of_record = true;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace jobctl::cost
