#include "jinja/preprocess.h"

#include "jinja/unicode.h"

namespace ac::jinja {

namespace {

// Builds the next version of the text, copying ranges of the current one with their origins.
struct Rewriter {
  const SourceText& in;
  SourceText out;

  void copy(size_t from, size_t to) {
    out.text.append(in.text, from, to - from);
    out.origin.insert(out.origin.end(), in.origin.begin() + std::ptrdiff_t(from), in.origin.begin() + std::ptrdiff_t(to));
  }
  SourceText finish() {
    out.origin.push_back(in.origin.back());
    return std::move(out);
  }
};

// After a JavaScript line terminator (\n, \r, U+2028, U+2029): where /^/m matches.
bool line_start(std::string_view s, size_t i) {
  if (i == 0) return true;
  char c = s[i - 1];
  if (c == '\n' || c == '\r') return true;
  return i >= 3 && (s.substr(i - 3, 3) == "\xe2\x80\xa8" || s.substr(i - 3, 3) == "\xe2\x80\xa9");
}

// /^[ \t]*({[#%-])/gm -> "$1"
SourceText lstrip(const SourceText& in) {
  Rewriter r{in, {}};
  std::string_view s = in.text;
  size_t copied = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!line_start(s, i)) continue;
    size_t j = i;
    while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
    if (j > i && j + 1 < s.size() && s[j] == '{' && (s[j + 1] == '#' || s[j + 1] == '%' || s[j + 1] == '-')) {
      r.copy(copied, i);
      copied = j;
      i = j;
    }
  }
  r.copy(copied, s.size());
  return r.finish();
}

// /([#%-]})\n/g -> "$1"
SourceText trim(const SourceText& in) {
  Rewriter r{in, {}};
  std::string_view s = in.text;
  size_t copied = 0;
  for (size_t i = 0; i + 2 < s.size(); ++i) {
    if ((s[i] == '#' || s[i] == '%' || s[i] == '-') && s[i + 1] == '}' && s[i + 2] == '\n') {
      r.copy(copied, i + 2);
      copied = i + 3;
      i += 2;
    }
  }
  r.copy(copied, s.size());
  return r.finish();
}

size_t skip_space(std::string_view s, size_t i) {
  while (size_t n = js_space_at(s, i)) i += n;
  return i;
}

// /{%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs: the tag goes; the whitespace after it stays
// unless the tag ends with "-%}"; with "{%-" the whitespace before it goes too.
SourceText generation_tags(const SourceText& in) {
  Rewriter r{in, {}};
  std::string_view s = in.text;
  size_t last = 0;
  size_t i = s.find("{%");
  while (i != std::string_view::npos) {
    size_t p = i + 2;
    bool left = p < s.size() && s[p] == '-';
    if (left) ++p;
    p = skip_space(s, p);
    if (s.substr(p).starts_with("end")) p += 3;
    bool ok = s.substr(p).starts_with("generation");
    bool right = false;
    size_t after = 0, end = 0;
    if (ok) {
      p = skip_space(s, p + 10);
      right = p < s.size() && s[p] == '-';
      if (right) ++p;
      ok = s.substr(p).starts_with("%}");
      after = p + 2;
      end = skip_space(s, after);
    }
    if (!ok) {
      i = s.find("{%", i + 1);
      continue;
    }
    size_t cut = i;
    if (left) cut = js_space_back(s, cut, last);
    r.copy(last, cut);
    if (!right) r.copy(after, end);
    last = end;
    i = s.find("{%", end);
  }
  r.copy(last, s.size());
  return r.finish();
}

}  // namespace

SourceText preprocess(std::string_view source, bool lstrip_blocks, bool trim_blocks) {
  SourceText t;
  t.text.assign(source);
  if (t.text.ends_with('\n')) t.text.pop_back();
  t.origin.resize(t.text.size() + 1);
  for (size_t i = 0; i < t.origin.size(); ++i) t.origin[i] = uint32_t(i);
  if (lstrip_blocks) t = lstrip(t);
  if (trim_blocks) t = trim(t);
  return generation_tags(t);
}

}  // namespace ac::jinja
