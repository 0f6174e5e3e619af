#pragma once
/// LiteLLM's URL and model rules for `huggingface/` deployments (litellm/llms/huggingface/chat/
/// transformation.py, `get_complete_url` and `_build_chat_completion_url`), resolved once at
/// load time into an OpenAI-compatible base URL (the adapter appends /chat/completions):
/// - an api_base (litellm_params, else HF_API_BASE / HUGGINGFACE_API_BASE): a TGI server or
///   Inference Endpoint; `/v1` is appended unless its path already ends in `/v1` (a trailing
///   `/chat/completions` is the full URL and is kept as such);
/// - a model that is itself a URL (`huggingface/https://xyz.endpoints.huggingface.cloud`): the
///   same rule on that URL, and the model sent is "tgi";
/// - `huggingface/<org>/<model>`: the HF router's hf-inference route,
///   https://router.huggingface.co/hf-inference/models/<org>/<model>/v1;
/// - `huggingface/<provider>/<org>/<model>`: the HF router's OpenAI-compatible endpoint
///   https://router.huggingface.co/v1 with model "<org>/<model>:<provider>" (HF's documented
///   provider selection; LiteLLM looks the provider's own model id up on the Hub instead, which
///   the router does itself here).

#include "config/config.hpp"

namespace tollgate::config {

/// Rewrites `d.api_base` (and `d.upstream_model` for the URL-model and provider forms) by the
/// rules above. `d.api_base` is the configured or environment base ("" when none).
void apply_huggingface_routes(Deployment& d);

}  // namespace tollgate::config
