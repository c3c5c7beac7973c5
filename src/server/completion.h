#pragma once
// One /v1/chat/completions or /v1/completions request, from its checked body to the response:
// the prompt (through the chat template for chat), the scheduler, incremental detokenization,
// stop strings, and the answer whole or as server-sent events. A client that disconnects cancels
// its request.
#include "agentcompile/server/http_server.h"
#include "agentcompile/server/metrics.h"
#include "agentcompile/server/openai_request.h"
#include "agentcompile/server/served_model.h"

namespace ac::server {

void serve_completion(ServedModel& m, const CompletionRequest& r, HttpResponder& out, ServerMetrics& metrics);

// The prompt's token ids: a chat conversation rendered by the model's template, or a completion
// prompt encoded with the special tokens Hugging Face adds by default. ApiError 400 otherwise.
std::vector<int32_t> prompt_ids(const ServedModel& m, const CompletionRequest& r);

}  // namespace ac::server
