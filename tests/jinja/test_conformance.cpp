// Chat-template conformance: every case of the corpus (conformance_corpus.h) rendered by the
// reference (@huggingface/jinja, the engine of transformers.js, in one node run of
// render_reference.js) and by ac::jinja::Template (render_ordered: the context's keys in the order
// the conversation has them) must give the same bytes, or both fail, ours with a clear one-line
// BadInput error. Both sides read the same fixed clock.
//
// With AC_CONFORMANCE_OUT=FILE the test also writes every outcome as JSON (read by
// tools/chat_template_conformance.sh, which makes the table in docs/chat-templates.md):
//   {"reference": ..., "now": ..., "templates": [{"name", "origin"}], "cases": [NAME],
//    "results": [{"template", "case", "variant", "status", ...}]}
// status: identical | both-fail | different | ours-fail | reference-fail; "problem" says what is
// wrong where the pair does not conform, "offset" is the first differing byte.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/jinja/template.h"
#include "conformance_corpus.h"
#include "fixed_clock.h"

namespace ac::test {
namespace {

struct Outcome {
  std::optional<std::string> output;  // or the error:
  std::string error;
  bool clean_error = false;  // ours only: a one-line BadInput naming the template
};

// Our side: each distinct template text parsed once per template name.
std::vector<Outcome> render_ours(const std::vector<ConformanceCase>& cases) {
  const ac::jinja::Options options = fixed_clock_options();
  std::map<std::pair<std::string, std::string>, std::shared_ptr<ac::jinja::Template>> parsed;
  std::vector<Outcome> outcomes;
  for (const ConformanceCase& c : cases) {
    const std::string subject = c.template_name + ": chat_template";
    Outcome o;
    try {
      auto& tpl = parsed[{c.template_name, c.template_text}];
      if (!tpl) tpl = std::make_shared<ac::jinja::Template>(ac::jinja::Template::parse(c.template_text, subject, options));
      o.output = tpl->render_ordered(c.context);  // keys in the order the conversation has them
    } catch (const Error& e) {
      o.error = e.what();
      o.clean_error = e.kind() == ErrorKind::BadInput && o.error.find('\n') == std::string::npos &&
                      o.error.find(c.template_name) != std::string::npos;
    } catch (const std::exception& e) {
      o.error = std::string("not an ac::Error: ") + e.what();
    }
    outcomes.push_back(std::move(o));
  }
  return outcomes;
}

std::vector<Outcome> render_reference(const std::vector<ConformanceCase>& cases) {
  OrderedJson request = {{"now", kFixedNow}, {"cases", OrderedJson::array()}};
  for (const ConformanceCase& c : cases)
    request["cases"].push_back({{"template", c.template_text}, {"context", c.context}});
  const OrderedJson answers = run_node_batch("render_reference.js", request);
  std::vector<Outcome> outcomes(cases.size());
  if (!answers.is_array() || answers.size() != cases.size()) {
    ADD_FAILURE() << "render_reference.js answered " << answers.size() << " cases of " << cases.size();
    for (Outcome& o : outcomes) o.error = "no answer from the reference";
    return outcomes;
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    if (answers[i].contains("output")) outcomes[i].output = answers[i]["output"].get<std::string>();
    else outcomes[i].error = answers[i].value("error", "no answer");
  }
  return outcomes;
}

// "...before|after..." around `offset` of `s`, as a JSON string literal.
std::string around(const std::string& s, size_t offset) {
  const size_t from = offset < 40 ? 0 : offset - 40;
  return excerpt(s.substr(from, 80), 200) + " (bytes " + std::to_string(from) + "..)";
}

struct Verdict {
  std::string status;
  std::string problem;  // empty where the pair conforms
  OrderedJson details = OrderedJson::object();
};

Verdict judge(const ConformanceCase& c, const Outcome& ours, const Outcome& ref) {
  Verdict v;
  if (ours.output && ref.output) {
    const std::string &a = *ours.output, &b = *ref.output;
    if (a == b) {
      v.status = "identical";
      return v;
    }
    size_t at = 0;
    while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
    v.status = "different";
    v.problem = "first difference at byte " + std::to_string(at) + " (ours " + std::to_string(a.size()) +
                " bytes, reference " + std::to_string(b.size()) + "): ours " + around(a, at) + " reference " +
                around(b, at);
    v.details = {{"offset", at}, {"ours_context", around(a, at)}, {"reference_context", around(b, at)}};
    return v;
  }
  if (ours.output) {
    v.status = "reference-fail";
    v.problem = "the reference fails (" + ref.error + ") but ours renders " + excerpt(*ours.output);
    v.details = {{"reference_error", ref.error}};
    return v;
  }
  if (ref.output) {
    v.status = "ours-fail";
    v.problem = "ours fails (" + ours.error + ") but the reference renders " + excerpt(*ref.output);
    v.details = {{"ours_error", ours.error}};
    return v;
  }
  v.status = "both-fail";
  v.details = {{"ours_error", ours.error}, {"reference_error", ref.error}};
  if (!ours.clean_error) {
    v.problem = "both fail, but ours is not a one-line BadInput naming \"" + c.template_name + "\": " + ours.error;
  } else if (c.template_text.find(ref.error) != std::string::npos && ours.error.find(ref.error) == std::string::npos) {
    // The reference's message is written in the template: a raise_exception whose text ours must keep.
    v.problem = "both fail, but ours loses the template's raise_exception message \"" + ref.error + "\": " + ours.error;
  }
  return v;
}

void write_results(const std::string& path, const std::vector<ConformanceCase>& cases,
                   const std::vector<Verdict>& verdicts) {
  OrderedJson doc = {{"reference", "@huggingface/jinja " + OrderedJson::parse(read_text_file(
                                         npm_dir() / "@huggingface" / "jinja" / "package.json"))
                                         .value("version", "?")},
                     {"now", kFixedNow},
                     {"templates", OrderedJson::array()},
                     {"cases", OrderedJson::array()},
                     {"results", OrderedJson::array()}};
  for (const ConformanceTemplate& t : conformance_templates())
    doc["templates"].push_back({{"name", t.name}, {"origin", template_origin(t)}});
  for (const OrderedJson& c : conformance_conversations().at("cases")) doc["cases"].push_back(c.at("name"));
  for (size_t i = 0; i < cases.size(); ++i) {
    OrderedJson r = {{"template", cases[i].template_name},
                     {"case", cases[i].case_name},
                     {"variant", cases[i].variant()},
                     {"status", verdicts[i].status}};
    if (!verdicts[i].problem.empty()) r["problem"] = verdicts[i].problem;
    r.update(verdicts[i].details);
    doc["results"].push_back(std::move(r));
  }
  // Written beside and renamed over: a reader never sees half a file.
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary) << doc.dump(1) << "\n";
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0) << "cannot write " << path;
}

// The corpus, rendered once by each side for all the tests below.
class ChatTemplateConformance : public ::testing::Test {
 protected:
  struct Rendered {
    std::vector<ConformanceCase> cases;
    std::vector<Outcome> ours, reference;
  };
  static const Rendered& rendered() {
    static const Rendered r = [] {
      Rendered x;
      x.cases = conformance_cases();
      x.reference = render_reference(x.cases);
      x.ours = render_ours(x.cases);
      return x;
    }();
    return r;
  }
};

TEST_F(ChatTemplateConformance, EveryCaseMatchesTheReference) {
  const Rendered& r = rendered();
  ASSERT_FALSE(r.cases.empty());
  std::vector<Verdict> verdicts;
  std::map<std::string, int> counts;
  int reported = 0, bad = 0;
  for (size_t i = 0; i < r.cases.size(); ++i) {
    verdicts.push_back(judge(r.cases[i], r.ours[i], r.reference[i]));
    ++counts[verdicts.back().status];
    if (verdicts.back().problem.empty()) continue;
    ++bad;
    if (++reported <= 40) ADD_FAILURE() << r.cases[i].label() << ": " << verdicts.back().problem;
  }
  std::string summary;
  for (const auto& [status, n] : counts) summary += " " + status + "=" + std::to_string(n);
  std::printf("chat-template conformance: %zu renders:%s\n", r.cases.size(), summary.c_str());
  EXPECT_EQ(bad, 0) << bad << " of " << r.cases.size() << " renders do not conform (first 40 above)";
  if (const char* out = std::getenv("AC_CONFORMANCE_OUT"); out && *out) write_results(out, r.cases, verdicts);
}

// The corpus itself: each conversation renders somewhere and each template renders something
// (a case failing everywhere tests nothing but the error path), and the raise-only template fails
// every case with its own message, on the reference.
TEST_F(ChatTemplateConformance, TheCorpusExercisesTheReference) {
  const Rendered& r = rendered();
  std::map<std::string, int> rendered_by_case, rendered_by_template;
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const bool ok = r.reference[i].output.has_value();
    rendered_by_case[r.cases[i].case_name] += ok;
    rendered_by_template[r.cases[i].template_name] += ok;
    if (r.cases[i].template_name == "raise-only") {
      EXPECT_EQ(r.reference[i].error,
                "This model has no chat format: send plain text to the completion endpoint instead.")
          << r.cases[i].label();
    }
  }
  for (const auto& [name, n] : rendered_by_case) EXPECT_GT(n, 0) << "no template renders case " << name;
  for (const auto& [name, n] : rendered_by_template) {
    if (name == "raise-only") continue;
    EXPECT_GT(n, 0) << "template " << name << " renders no case";
  }
}

// Our clock formats as the reference's strftime_now does at the same instant.
TEST(ChatTemplateConformanceClock, MatchesTheReferenceStrftime) {
  const std::vector<std::string> formats = {"%d %b %Y", "%Y-%m-%d %H:%M", "%B %%Y %j %e %", "%%%d%"};
  OrderedJson request = {{"now", kFixedNow}, {"cases", OrderedJson::array()}};
  for (const std::string& f : formats)
    request["cases"].push_back({{"template", "{{ strftime_now(fmt) }}"}, {"context", {{"fmt", f}}}});
  const OrderedJson answers = run_node_batch("render_reference.js", request);
  ASSERT_TRUE(answers.is_array() && answers.size() == formats.size());
  for (size_t i = 0; i < formats.size(); ++i)
    EXPECT_EQ(fixed_strftime(formats[i]), answers[i].value("output", "(error)")) << formats[i];
}

}  // namespace
}  // namespace ac::test
