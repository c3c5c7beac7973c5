#include "agentcompile/jinja/template.h"

#include <algorithm>
#include <vector>

#include "agentcompile/core/error.h"
#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/preprocess.h"
#include "jinja/unicode.h"
#include "jinja/value.h"

namespace ac::jinja {

struct Template::Impl {
  std::string name;
  Options options;
  Limits limits;
  std::vector<size_t> line_starts;  // of the original source, for error positions
  std::vector<NodePtr> program;

  // "line L, column C: what" (columns count characters).
  std::string located(const TemplateError& e, std::string_view source_for_columns) const {
    if (e.pos == kNoPos) return e.what;
    size_t line = size_t(std::upper_bound(line_starts.begin(), line_starts.end(), e.pos) - line_starts.begin());
    size_t start = line_starts[line - 1];
    size_t column = 1;
    for (size_t i = start; i < e.pos && i < source_for_columns.size(); ++i)
      if ((static_cast<unsigned char>(source_for_columns[i]) & 0xc0) != 0x80) ++column;
    return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + e.what;
  }
  std::string source;

  template <class J>
  std::string render(const J& context) const;
};

Template::Template(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

Template Template::parse(std::string_view source, std::string name, Options options, Limits limits) {
  if (source.size() > limits.max_source_bytes)
    throw_input(name, "the template is " + std::to_string(source.size()) + " bytes, more than the limit of " +
                          std::to_string(limits.max_source_bytes));
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(name);
  impl->options = std::move(options);
  impl->limits = limits;
  impl->source.assign(source);
  impl->line_starts.push_back(0);
  for (size_t i = 0; i < source.size(); ++i)
    if (source[i] == '\n') impl->line_starts.push_back(i + 1);
  if (size_t bad = first_invalid_utf8(source); bad != std::string_view::npos)
    throw_input(impl->name, impl->located({"the template is not valid UTF-8", bad}, source));
  try {
    SourceText text = preprocess(source, impl->options.lstrip_blocks, impl->options.trim_blocks);
    std::vector<Token> tokens = tokenize(text);
    impl->program = ac::jinja::parse(tokens, limits.max_depth);
  } catch (const TemplateError& e) {
    throw_input(impl->name, impl->located(e, source));
  }
  return Template(std::move(impl));
}

template <class J>
std::string Template::Impl::render(const J& context) const {
  if (!context.is_object()) throw_input(name, "the variables must be a JSON object");
  State st(limits, options);
  Interpreter in(st);
  try {
    Env* globals = st.env(nullptr);
    globals->set("false", Value::boolean(false));
    globals->set("true", Value::boolean(true));
    globals->set("none", Value::null());
    globals->set("raise_exception", Value::func(st.func(Fn::RaiseException)));
    globals->set("range", Value::func(st.func(Fn::Range)));
    globals->set("strftime_now", Value::func(st.func(Fn::StrftimeNow)));
    globals->set("True", Value::boolean(true));
    globals->set("False", Value::boolean(false));
    globals->set("None", Value::null());
    Value vars = from_json(context, st);
    for (auto& [k, v] : vars.map().entries()) {
      if (k == "namespace" || globals->find_local(k))
        fail("the variable '" + one_line(k, 60) + "' would replace a builtin of the same name");
      globals->set(k, v);
    }
    return in.run(program, globals);
  } catch (const TemplateError& e) {
    throw_input(name, located(e, source));
  }
}

std::string Template::render(const Json& context) const { return impl_->render(context); }
std::string Template::render_ordered(const nlohmann::ordered_json& context) const { return impl_->render(context); }

}  // namespace ac::jinja
