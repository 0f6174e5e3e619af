#include "providers/gemini/stream.hpp"
#include "core/json_parse.hpp"

#include <ctime>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "core/ids.hpp"
#include "providers/gemini/errors.hpp"
#include "providers/gemini/translate.hpp"

namespace tollgate::providers::gemini {
namespace json = boost::json;

namespace {

class Decoder final : public StreamDecoder {
 public:
  Decoder(std::string model, bool include_usage)
      : model_(std::move(model)), include_usage_(include_usage), id_("chatcmpl-" + core::new_uuid()),
        created_(static_cast<std::int64_t>(std::time(nullptr))) {}

  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override {
    if (finished_ || ev.data.empty()) return;
    boost::system::error_code ec;
    auto v = core::parse_json(ev.data, ec);
    if (ec || !v.is_object()) {
      malformed_ = true;
      return;
    }
    const auto& o = v.get_object();
    if (const auto* e = o.if_contains("error"); e && e->is_object()) {
      auto oc = outcome_from_google_error(0, e->get_object());
      if (!oc.status) oc.status = 500;
      error_ = oc;
      return;
    }
    if (const auto* mv = o.if_contains("modelVersion"); mv && mv->is_string()) model_ = std::string(mv->get_string());
    if (const auto* um = o.if_contains("usageMetadata")) {
      if (auto u = usage_from_gemini(*um); u.reported) usage_ = u;
    }
    const auto* cands = o.if_contains("candidates");
    if (cands && cands->is_array()) {
      for (const auto& cv : cands->get_array())
        if (const auto* c = cv.if_object()) candidate(*c, out);
    } else if (auto blocked = opened_.empty() ? blocked_prompt_outcome(o) : std::nullopt) {
      // Blocked before generation, nothing relayed yet: the attempt's content_policy failure
      // (fallback), its usage (the prompt's tokens) final — the bill.
      error_ = std::move(blocked);
      finished_ = true;
      return;
    } else if (const auto* pf = o.if_contains("promptFeedback"); pf && pf->is_object() && pf->get_object().contains("blockReason")) {
      // Blocked after choices were relayed (not documented): ends them on content_filter.
      opened(0, out);
      out.push_back(chunk(json::array{json::object{{"index", 0}, {"delta", json::object{}}, {"finish_reason", "content_filter"}}}));
      finished_choices_.insert(0);
    }
    const bool all_done = !opened_.empty() && finished_choices_.size() == opened_.size();
    if (all_done) {
      finished_ = true;
      if (include_usage_ && usage_.reported) {
        json::object last = chunk_base();
        last["choices"] = json::array{};
        last["usage"] = usage_to_openai_with_reasoning(usage_);
        out.push_back(json::serialize(last));
      }
    }
  }
  bool finished() const override { return finished_; }
  Usage usage() const override { return usage_; }
  // The usage of the chunk that finished the stream (or an earlier one) is cumulative: the bill.
  bool usage_final() const override { return finished_ && usage_.reported && !malformed_; }
  std::optional<policy::Outcome> error() const override { return error_; }

 private:
  json::object chunk_base() const {
    return json::object{{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", model_}};
  }
  std::string chunk(json::array choices) const {
    json::object c = chunk_base();
    c["choices"] = std::move(choices);
    return json::serialize(c);
  }
  void opened(std::int64_t index, std::vector<std::string>& out) {
    if (!opened_.insert(index).second) return;
    out.push_back(chunk(json::array{json::object{{"index", index},
                                                 {"delta", json::object{{"role", "assistant"}, {"content", ""}}},
                                                 {"finish_reason", nullptr}}}));
  }

  void candidate(const json::object& c, std::vector<std::string>& out) {
    std::int64_t index = 0;
    if (const auto* i = c.if_contains("index"); i && i->is_int64()) index = i->get_int64();
    opened(index, out);
    const auto* content = c.if_contains("content");
    const auto* parts = content && content->is_object() ? content->get_object().if_contains("parts") : nullptr;
    if (parts && parts->is_array()) {
      for (const auto& pv : parts->get_array()) {
        const auto* p = pv.if_object();
        if (!p) continue;
        if (const auto* th = p->if_contains("thought"); th && th->is_bool() && th->get_bool()) continue;
        json::object delta;
        if (const auto* t = p->if_contains("text"); t && t->is_string() && !t->get_string().empty()) {
          delta["content"] = t->get_string();
        } else if (const auto* fc = p->if_contains("functionCall"); fc && fc->is_object()) {
          const auto& f = fc->get_object();
          const auto* args = f.if_contains("args");
          const auto* name = f.if_contains("name");
          auto& n = calls_[index];
          delta["tool_calls"] = json::array{json::object{
              {"index", n},
              {"id", "call_" + std::to_string(index) + "_" + std::to_string(n)},
              {"type", "function"},
              {"function", json::object{{"name", name && name->is_string() ? name->get_string() : ""},
                                        {"arguments", args ? json::serialize(*args) : std::string("{}")}}}}};
          ++n;
        } else {
          continue;
        }
        out.push_back(chunk(json::array{json::object{{"index", index}, {"delta", std::move(delta)}, {"finish_reason", nullptr}}}));
      }
    }
    if (const auto* fr = c.if_contains("finishReason"); fr && fr->is_string() && !fr->get_string().empty()) {
      const bool called = calls_.contains(index);
      out.push_back(chunk(json::array{json::object{
          {"index", index}, {"delta", json::object{}}, {"finish_reason", finish_reason_from_gemini(fr->get_string(), called)}}}));
      finished_choices_.insert(index);
    }
  }

  std::string model_;
  bool include_usage_;
  std::string id_;
  std::int64_t created_;
  std::set<std::int64_t> opened_, finished_choices_;
  std::map<std::int64_t, std::int64_t> calls_;  ///< choice → tool calls so far
  bool finished_ = false;
  bool malformed_ = false;
  Usage usage_;
  std::optional<policy::Outcome> error_;
};

}  // namespace

std::unique_ptr<StreamDecoder> make_stream_decoder(std::string model, bool include_usage) {
  return std::make_unique<Decoder>(std::move(model), include_usage);
}

}  // namespace tollgate::providers::gemini
