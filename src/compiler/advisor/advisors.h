#pragma once
// Advisor implementations behind make_advisor (advisor.h); internal to src/compiler/advisor.
#include <memory>
#include <string>

#include "agentcompile/compiler/advisor.h"

namespace ac::advisors {

std::unique_ptr<Advisor> make_openai(const AdvisorConfig& config);

// The advice an LLM's message content gives: validated when it is usable advice (a JSON object);
// otherwise the heuristic advice with the reply's rejections added, fell_back set.
AdviceResult advice_from_content(const AdvisorRequest& r, const std::string& content, const std::string& source);

// The exchange fields every advisor fills the same way.
AdviceExchange exchange_for(const AdvisorRequest& r, const std::string& advisor);

}  // namespace ac::advisors
