#pragma once
// tollgate-mock: shared declarations of the upstream LLM-provider simulator.
// Pure data / string building lives here; socket I/O only in server.cpp.
// See tools/mock/README.md for the user reference.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tollgate::mock {

/// Upper bounds that keep any input from exhausting memory or time.
inline constexpr std::int64_t kMaxCompletionTokens = 1'000'000;
inline constexpr int kMaxChoices = 128;
inline constexpr std::int64_t kMaxDelayMs = 3'600'000;
/// Bound of the prompt-side counts a behaviour may give (sums of them cannot overflow).
inline constexpr std::int64_t kMaxPromptCount = 1'000'000'000'000;
/// Default prompt tokens billed per PDF page (behaviour `pdf_tokens_per_page`).
inline constexpr std::int64_t kDefaultPdfTokensPerPage = 2000;
/// At most this many entries are kept in the `bills` list of /mock/stats (the newest).
inline constexpr std::size_t kMaxBills = 10'000;

/// Where and how usage is reported (behaviour `usage_style`, README "Behaviour object").
enum class UsageStyle { normal, omit, null, every_chunk, with_finish, string_counts };

/// One scripted behaviour; every field optional (README "Behaviour object").
struct Behavior {
  std::optional<int> status;
  std::optional<std::string> error;
  std::optional<std::string> retry_after;  ///< seconds (integer text) or verbatim HTTP-date
  std::optional<std::int64_t> retry_after_ms;
  std::optional<std::int64_t> latency_ms;
  /// Streams: delay after the opening events before the first token event (a slow first token
  /// behind an early role chunk); 0-3600000 ms.
  std::optional<std::int64_t> first_token_ms;
  std::optional<double> tokens_per_second;
  std::optional<std::int64_t> completion_tokens;
  std::optional<std::string> content;
  std::optional<std::string> fault;
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> cached_tokens;
  std::optional<bool> ignore_max_tokens;         ///< generate the desired count whatever the cap
  std::optional<bool> fill_max_tokens;           ///< generate exactly the request's cap
  std::optional<bool> reject_prefill;            ///< a final assistant message is refused (400)
  std::optional<std::int64_t> reasoning_tokens;  ///< per choice
  std::optional<bool> reasoning_outside;         ///< OpenAI family: reasoning beside completion
  std::optional<std::int64_t> cache_write_tokens;          ///< Anthropic: 5-minute cache writes
  std::optional<std::int64_t> cache_write_1h_tokens;       ///< Anthropic: 1-hour cache writes
  std::optional<std::string> service_tier;                 ///< the tier to report, verbatim
  std::optional<std::int64_t> audio_input_tokens;          ///< OpenAI: a part of the prompt
  std::optional<std::int64_t> audio_output_tokens;         ///< OpenAI: per choice
  std::optional<std::int64_t> rejected_prediction_tokens;  ///< OpenAI: per choice
  std::optional<std::int64_t> accepted_prediction_tokens;  ///< OpenAI: per choice
  std::optional<std::int64_t> web_search_calls;            ///< Anthropic: server tool use
  std::optional<std::int64_t> image_tokens;         ///< per image, replaces the measured count
  std::optional<std::int64_t> pdf_tokens_per_page;  ///< default kDefaultPdfTokensPerPage
  std::optional<UsageStyle> usage_style;
  /// OpenAI chat and Anthropic families: the usage object to report, verbatim (serialized JSON),
  /// instead of the counted one; the bill keeps the counted usage (README "Behaviour object").
  std::optional<std::string> usage;
  std::optional<std::int64_t> stall_after_tokens;     ///< fault stall: tokens before the stall
  std::optional<std::int64_t> truncate_after_tokens;  ///< fault truncate (streams): tokens sent
  std::optional<bool> bill_on_cancel;  ///< a request the client abandons is billed in full
  /// The answer's text is the request's sampling parameters as one JSON object (temperature,
  /// top_p, seed, presence_penalty, frequency_penalty, stop, max_tokens, max_completion_tokens:
  /// those present), so a test sees what the gateway sent.
  std::optional<bool> echo_params;
  /// The answer ends with a call of this function (Anthropic tool_use, Responses function_call)
  /// after its text, with `tool_arguments` (JSON text; default "{}") as its arguments. The usage
  /// is unchanged: the call's tokens are among the completion tokens.
  std::optional<std::string> tool_call;
  std::optional<std::string> tool_arguments;
  /// OpenAI family: the answer is this many calls of the tool `get_weather` (1-8) instead of
  /// text (README "Tool calls and quirks").
  std::optional<std::int64_t> tool_calls;
  /// Deviations of OpenAI-compatible servers to reproduce (kQuirks; README "Quirks catalogue").
  std::optional<std::vector<std::string>> quirks;
  /// Gemini family: the prompt is blocked before generation — a 200 with
  /// `promptFeedback.blockReason` = this, no candidates, the prompt tokens in usageMetadata (and
  /// billed); README "Google generateContent".
  std::optional<std::string> block_reason;

  bool has_outcome() const { return status || error || fault || retry_after || retry_after_ms; }
};

/// Parses a behaviour JSON object. Unknown fields or bad types → false and `err`.
bool parse_behavior(const boost::json::value& v, Behavior& out, std::string& err);
/// Parses query-string directives (`error=x&retry_after=1`). Same strictness.
bool parse_behavior_query(std::string_view query, Behavior& out, std::string& err);
/// `high` overrides `low`: outcome fields (status, error, fault, retry_after*) as one group,
/// the other fields one by one.
Behavior merge_behavior(const Behavior& low, const Behavior& high);

/// Scripted queues per model (thread safe).
void script_set(const std::string& model, std::vector<Behavior> queue);
/// Next behaviour for the model: pops the front unless it is the last one (which repeats).
std::optional<Behavior> script_next(const std::string& model);
void script_reset();

/// The usage numbers of one answer in the OpenAI convention, whatever the family: `prompt`
/// counts every input token (cached, cache writes and audio are parts of it); `completion` is
/// what the usage reports as completion (OpenAI) or output (Anthropic) tokens.
struct Counts {
  std::int64_t prompt = 0;
  std::int64_t cached = 0;
  std::int64_t cache_write = 0;     ///< 5-minute TTL
  std::int64_t cache_write_1h = 0;  ///< 1-hour TTL
  std::int64_t audio_input = 0;
  std::int64_t completion = 0;     ///< visible + audio + rejected (+ reasoning unless outside)
  std::int64_t reasoning = 0;
  bool reasoning_outside = false;  ///< reasoning is not included in `completion`
  std::int64_t audio_output = 0;
  std::int64_t accepted_prediction = 0;
  std::int64_t rejected_prediction = 0;
  std::int64_t web_search_calls = 0;

  /// Every output token billed: completion, plus reasoning when reported beside it.
  std::int64_t billed_output() const { return reasoning_outside ? completion + reasoning : completion; }
  /// `total_tokens` as OpenAI-family usage reports it.
  std::int64_t total() const { return prompt + billed_output(); }
  /// Anthropic `input_tokens`: the prompt without cache reads and writes.
  std::int64_t uncached_input() const { return prompt - cached - cache_write - cache_write_1h; }
};

/// Statistics (thread safe). Every request ends in exactly one of succeeded/failed/cancelled.
enum class Outcome { succeeded, failed, cancelled };

/// What the mock billed for one request (one entry of the `bills` list of /mock/stats).
struct Bill {
  std::string model;
  bool anthropic = false;
  std::string family;  ///< the wire family when neither OpenAI nor Anthropic ("bedrock")
  bool stream = false;
  std::string service_tier;
  std::string request_id;                     ///< the reply's request-id / x-request-id header
  std::string response_id;                    ///< chatcmpl-… / msg_…
  std::optional<std::string> client_call_id;  ///< header x-litellm-call-id, else x-request-id
  Counts counts;
  std::int64_t image_input_tokens = 0;  ///< a part of counts.prompt
  std::int64_t pdf_pages = 0;
  std::int64_t pdf_input_tokens = 0;  ///< a part of counts.prompt
};

void stats_request_begin(const std::string* model, bool stream);  ///< model null: no model known
/// Ends a request begun with a model; `bill` null = nothing billed (errors, most faults).
void stats_request_end(const std::string& model, Outcome outcome, const Bill* bill);
void stats_note_model(const std::string& model);
/// Records the `traceparent` / `tracestate` a request for `model` came with (empty when none).
void stats_note_trace(const std::string& model, std::string traceparent, std::string tracestate);
std::string stats_json();
std::string models_json();
void stats_reset();

/// What one successful answer looks like, independent of the wire family.
struct Completion {
  std::string id;
  std::int64_t created = 0;
  std::string model;
  bool anthropic = false;
  // Input side, for the whole request.
  std::int64_t prompt_tokens = 0;          ///< every input token; the next six are parts of it
  std::int64_t cached_tokens = 0;
  std::int64_t cache_write_tokens = 0;     ///< Anthropic only
  std::int64_t cache_write_1h_tokens = 0;  ///< Anthropic only
  std::int64_t audio_input_tokens = 0;     ///< OpenAI only
  std::int64_t image_input_tokens = 0;
  std::int64_t pdf_input_tokens = 0;
  std::int64_t pdf_pages = 0;
  std::int64_t web_search_calls = 0;  ///< Anthropic only
  // Output side, per choice.
  std::int64_t tokens = 0;  ///< visible completion tokens (text events) per choice
  std::int64_t reasoning_tokens = 0;
  bool reasoning_outside = false;               ///< OpenAI only
  std::int64_t audio_output_tokens = 0;         ///< OpenAI only
  std::int64_t rejected_prediction_tokens = 0;  ///< OpenAI only
  std::int64_t accepted_prediction_tokens = 0;  ///< OpenAI only; a part of `tokens`
  int n = 1;
  bool capped = false;  ///< finish reason length / max_tokens
  bool include_usage = false;
  std::string service_tier;  ///< as reported
  UsageStyle usage_style = UsageStyle::normal;
  std::string usage_verbatim;  ///< behaviour `usage`: reported instead of the counted usage; empty = none
  std::vector<std::string> words;  ///< custom content words; empty = lorem ipsum cycle
  /// A continued answer (an assistant prefill): pieces of the canonical answer the prefill
  /// already holds (this answer starts after them), and whether its first piece opens with a
  /// space (the prefill ended inside the text, as a model continuing "Hello" writes " world").
  std::int64_t first = 0;
  bool lead_space = false;
  std::string tool_name;           ///< the function the answer calls: behaviour tool_call, or (Ollama, Cohere) Api::tool_to_call; empty = none
  std::string tool_arguments;      ///< its arguments, JSON text
  int tool_calls = 0;               ///< OpenAI family: tool calls instead of text (tokens = argument pieces)
  std::vector<std::string> quirks;  ///< server deviations to reproduce (kQuirks)
  std::string block_reason;         ///< Gemini: the prompt was blocked (no output); empty = not
  bool has_quirk(std::string_view q) const;
  /// Tool answers: the argument pieces of call `k` (their concatenation is the arguments JSON),
  /// one per token event; `args_one_chunk` makes it one piece.
  std::vector<std::string> tool_pieces(int k) const;

  /// The text of token i (a word plus a separating space unless last).
  std::string piece(std::int64_t i) const;
  /// Concatenation of the first `count` pieces.
  std::string text(std::int64_t count) const;
  /// The usage once `visible` text tokens per choice were generated: the prompt side and the
  /// reasoning in full, the visible tokens so far, audio and prediction tokens only once all
  /// `tokens` were generated.
  Counts counts(std::int64_t visible) const;
  /// counts(tokens): the whole answer.
  Counts full_counts() const { return counts(tokens); }
};

/// The quirk names a behaviour may list (README "Quirks catalogue").
inline constexpr std::string_view kQuirks[] = {"finish_stop", "args_one_chunk", "no_index", "same_index",
                                               "no_role", "nulls", "split_utf8"};
/// Makes `c` a tool answer of `calls` calls (tokens = their argument pieces, never capped).
void make_tool_answer(Completion& c, int calls);
/// Builds the answer to a chat request from its body and the merged behaviour (README "Token
/// counting"); `id`, `created` and `model` are left to the caller. False with `err` (the whole
/// 400 message) when the request or the behaviour cannot be answered.
bool build_completion(const boost::json::object& body, bool anthropic, const Behavior& b,
                      Completion& c, std::string& err);

// ---- prompt media (media.cpp) ----

/// Image and PDF tokens found in a part of a prompt.
struct MediaTally {
  std::int64_t image_tokens = 0;
  std::int64_t pdf_pages = 0;
  std::int64_t pdf_tokens = 0;
};

/// How media are billed for one request.
struct MediaRules {
  bool anthropic = false;
  std::optional<std::int64_t> image_tokens;  ///< replaces every image's measured count
  std::int64_t pdf_tokens_per_page = kDefaultPdfTokensPerPage;
};

/// Pixel size of an image.
struct ImageSize {
  std::int64_t width = 0;
  std::int64_t height = 0;
};

/// Adds the tokens of `part` to `out` when it is an image or PDF content part of the family
/// (OpenAI `image_url` / `file`, Anthropic `image` / `document`); other parts add nothing.
void tally_media_part(const boost::json::object& part, const MediaRules& rules, MediaTally& out);
/// Width and height read from a PNG, JPEG, GIF or WebP header; nullopt when not recognised.
std::optional<ImageSize> image_size(std::string_view bytes);
/// Pages of a PDF: the largest `/Count N` of a `/Type /Pages` object, else the number of
/// `/Type /Page` objects; 0 when neither is found. At most kMaxCompletionTokens.
std::int64_t pdf_page_count(std::string_view bytes);
/// GPT-4o image tokens: 85 for low detail, else 85 + 170 per 512-px tile after the scaling
/// steps; 765 when the size is unknown.
std::int64_t openai_image_tokens(const std::optional<ImageSize>& size, bool low_detail);
/// Claude image tokens: ceil(w*h/750) after fitting a 1568-px long edge, at most 1600 (~1.15 MP); 1600 when unknown.
std::int64_t anthropic_image_tokens(const std::optional<ImageSize>& size);

// ---- base64 (base64.cpp) ----

/// Decodes standard or URL-safe base64; ASCII whitespace is skipped, `=` padding optional.
/// nullopt on any other byte or a malformed tail. The output never exceeds 3/4 of the input.
std::optional<std::string> base64_decode(std::string_view in);
/// Standard base64 with `=` padding (SageMaker stream PayloadPart bytes).
std::string base64_encode(std::string_view in);
/// The decoded payload of a `data:<type>[;…];base64,<data>` URL (`media_type` set to the
/// lower-cased `<type>` when given); nullopt for other URLs or undecodable data.
std::optional<std::string> data_url_decode(std::string_view url, std::string* media_type = nullptr);

// ---- wire families ----

/// Input of an error reply.
struct ErrorSpec {
  std::string name;  ///< error name; empty = bare status
  int status = 0;    ///< 0 = the name's own status
  std::string model;
  std::int64_t prompt_tokens = 0;
  std::optional<std::string> retry_after;
  std::optional<std::int64_t> retry_after_ms;
  std::string request_id;
  std::string message;  ///< non-empty: replaces the catalogue message
};

/// A complete, non-streaming reply. `headers` are extra "name: value\r\n" lines.
struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string headers;
  std::string body;
};

/// One wire family (OpenAI-compatible or Anthropic Messages).
class Api {
 public:
  virtual ~Api() = default;
  virtual std::string new_request_id() const = 0;
  virtual std::string new_completion_id() const = 0;
  /// Request-id header line plus the family's usual success headers (rate limits …).
  virtual std::string success_headers(const Completion& c, std::string_view request_id) const = 0;
  /// Header lines every reply of the family carries (request id).
  virtual std::string base_headers(std::string_view request_id) const = 0;
  virtual std::string body(const Completion& c) const = 0;
  /// SSE text before the first token, and for token i (all choices).
  virtual std::string stream_open(const Completion& c) const = 0;
  virtual std::string stream_token(const Completion& c, std::int64_t i) const = 0;
  /// SSE text after the last token, in three parts: the end of the content (OpenAI: the
  /// finish_reason chunks; Anthropic: content_block_stop), the usage (OpenAI: the usage chunk
  /// when one is due; Anthropic: message_delta) and the end marker (`[DONE]` / message_stop).
  virtual std::string stream_finish(const Completion& c) const = 0;
  virtual std::string stream_usage(const Completion& c) const = 0;
  virtual std::string stream_done(const Completion& c) const = 0;
  /// One SSE event whose data is not JSON (fault `malformed_event`).
  virtual std::string stream_malformed() const = 0;
  /// The family's name in /mock/stats bills when it is not "openai"/"anthropic" (empty: those).
  virtual std::string_view family() const { return {}; }
  /// The content-type of a stream reply.
  virtual std::string_view stream_content_type() const { return "text/event-stream; charset=utf-8"; }
  virtual Reply error(const ErrorSpec& e) const = 0;
  /// The request in the OpenAI/Anthropic shape build_completion reads (messages with content,
  /// max_tokens, stream), for families whose bodies differ (Ollama, Cohere); nullopt = as is.
  virtual std::optional<boost::json::object> request_view(const boost::json::object&) const { return std::nullopt; }
  /// The function the answer calls (Completion::tool_name) for a request with tools; "" = text.
  virtual std::string tool_to_call(const boost::json::object&) const { return {}; }
};

const Api& openai_api();
const Api& anthropic_api();
/// The OpenAI Responses API family (responses.cpp): a response object, its typed stream events.
const Api& responses_api();
/// The chat-shaped view of a Responses request that build_completion measures: `messages` from
/// `instructions` and the `input` items' content (function outputs and call arguments included),
/// `max_tokens` from `max_output_tokens`, `model`, `stream`, `service_tier`; usage always reported.
boost::json::object responses_as_chat(const boost::json::object& body);
/// A response this mock created (its final object), by id; `erase` forgets it (DELETE).
std::optional<std::string> stored_response(const std::string& id, bool erase);
void stored_responses_reset();

// ---- request bodies received (recorded.cpp) ----

/// Keeps the body of a model request (the newest kMaxRecorded), for GET /mock/requests.
void record_request(std::string_view path, std::string_view model, std::string_view body);
/// {"requests":[{"path","model","body"}]}, oldest first; `body` is the JSON received.
std::string recorded_requests_json();
void recorded_requests_reset();
inline constexpr std::size_t kMaxRecorded = 200;

// ---- Google generateContent: Gemini API and Vertex AI (gemini.cpp) ----

/// A generateContent URL: `/v1beta/models/{model}:{method}` (Gemini API) or
/// `/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:{method}` (Vertex AI).
/// The wire format of an embeddings answer (embeddings.cpp; README "Embeddings"): OpenAI's, or
/// a provider's native endpoint read and answered in its own shape.
enum class EmbedWire {
  openai,        ///< POST /v1/embeddings
  gemini,        ///< Gemini API {model}:embedContent
  gemini_batch,  ///< Gemini API {model}:batchEmbedContents
  vertex,        ///< Vertex AI {model}:predict
  ollama,        ///< Ollama POST /api/embed
  cohere,        ///< Cohere POST /v2/embed
};

struct GoogleRoute {
  bool vertex = false;
  bool stream = false;  ///< streamGenerateContent
  std::string model;    ///< percent-decoded (may carry `?directives`)
  /// Set for :embedContent / :batchEmbedContents (Gemini API) and :predict (Vertex AI).
  std::optional<EmbedWire> embed;
};
/// The route of `path`, nullopt when it is not a generateContent (or embeddings) URL.
std::optional<GoogleRoute> google_route(std::string_view path);

/// A generateContent request made ready for the chat engine: the equivalent OpenAI chat body
/// and the wire family that writes the answer in Google's shape (a forced function call, mode
/// ANY, is answered with a call of `tool`).
struct GoogleCall {
  std::string chat_body;
  std::string tool;
  std::unique_ptr<Api> api;
};
/// Checks the credential (Gemini API: an `x-goog-api-key`, else 403 PERMISSION_DENIED; Vertex: a
/// live bearer token minted by POST /token, else 401 UNAUTHENTICATED) and translates the body
/// (400 INVALID_ARGUMENT when it is not a GenerateContentRequest).
/// An embeddings route's body is passed on as it is (embeddings.cpp reads it), with the family
/// (Google errors and headers) in `api`.
std::expected<GoogleCall, Reply> google_prepare(const GoogleRoute& route, std::string_view body,
                                                std::string_view api_key, std::string_view authorization);
/// POST /token (Google's OAuth token endpoint for service accounts): the form's grant_type must
/// be jwt-bearer and its assertion a well-formed RS256 JWT with iss, scope (cloud-platform),
/// aud, iat and exp (at most an hour later, not expired); → {access_token, expires_in,
/// token_type}; else 400 invalid_grant. The query may set `expires_in` (default 3600) or override a
/// form field (e.g. a wrong grant_type, to test a refusal).
Reply google_token(std::string_view query, std::string_view form);
/// Whether `authorization` is "Bearer <a live token minted here>".
bool google_token_valid(std::string_view authorization);
/// GET /mock/google/tokens: {"minted": n, "rejected": n}.
std::string google_token_stats();
/// Forgets tokens and counts (POST /mock/reset).
void google_reset();

// ---- Amazon Bedrock Converse / ConverseStream and SageMaker (bedrock.cpp) ----

/// The Bedrock Converse wire family: JSON bodies, AWS event-stream frames for streams
/// (Api::stream_content_type), AWS errors (x-amzn-ErrorType header, {"message"} body).
const Api& bedrock_api();
/// A 403 reply when `authorization` is not a SigV4 header (absent: UnrecognizedClientException
/// "Missing Authentication Token"; garbled: InvalidSignatureException), else nullopt.
std::optional<Reply> aws_signature_error(std::string_view authorization, std::string_view amz_date);
/// A Converse request body → the Anthropic Messages body the shared answer builder reads
/// (model := `model`, `stream`, max_tokens := inferenceConfig.maxTokens or 4096). False with
/// `err` when the body is not a Converse request.
bool converse_to_messages_body(std::string_view converse, const std::string& model, bool stream, std::string& out,
                               std::string& err);
/// SageMaker endpoint containers (sagemaker.cpp): Hugging Face TGI (`{"inputs"}` →
/// `[{"generated_text"}]`) and OpenAI-compatible chat; streams as InvokeEndpointWithResponseStream
/// `PayloadPart` events carrying the container's SSE bytes; errors as bedrock_api()'s.
const Api& sagemaker_tgi_api();
const Api& sagemaker_chat_api();
/// An InvokeEndpoint body → the OpenAI chat body the shared answer builder reads (model :=
/// `endpoint`, `stream`); sets `tgi` when the body is TGI's `{"inputs", "parameters"}`. False with
/// `err` when it is neither.
bool sagemaker_to_chat_body(std::string_view body, const std::string& endpoint, bool stream, std::string& out, bool& tgi,
                            std::string& err);
/// Ollama's native /api/chat and /api/generate (ollama.cpp).
const Api& ollama_chat_api();
const Api& ollama_generate_api();
/// Cohere's v2 /v2/chat (cohere.cpp).
const Api& cohere_api();

// ---- small shared helpers (util.cpp) ----
std::string random_token(std::size_t len);  ///< [A-Za-z0-9]
std::int64_t unix_now();
std::string json_quote(std::string_view s);  ///< JSON string literal with quotes
std::string rfc3339_after(std::int64_t seconds_from_now);
std::string_view reason_phrase(int status);
/// 502 page as sent by a fronting proxy.
Reply bad_gateway_html(std::string_view request_id_header);
/// Retry-After value ("1" by default).
std::string retry_after_value(const std::optional<std::string>& v);
/// A usage count as JSON: a number, or a string of its digits when `quoted`.
std::string count_json(std::int64_t v, bool quoted);

}  // namespace tollgate::mock
