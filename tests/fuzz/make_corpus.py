#!/usr/bin/env python3
"""Regenerates the seed corpora of tests/fuzz/corpus/ (docs/fuzzing.md "Corpora").

Usage: tests/fuzz/make_corpus.py http://127.0.0.1:PORT   (a running tollgate-mock)

Upstream answers (bodies, streams, error bodies of every provider) are captured from the
simulator, whose wire formats follow each provider's public API docs (tools/mock/README.md);
requests, admin bodies and HTTP framing vectors are written here from the public API shapes and
tests/e2e/framing.test.mjs; config and price files come from tests/fixtures and data/. Each seed
starts with the control bytes its target reads first (see the target's header comment).
Deterministic apart from the simulator's ids and timestamps.
"""
import hashlib
import http.client
import json
import os
import shutil
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
MOCK = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else None


def put(target, data, name=None):
    """Writes one seed (bytes) into corpus/<target>/, named after its content."""
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def post(path, body, headers=None):
    """POSTs JSON to the simulator; returns (status, raw response body)."""
    req = urllib.request.Request(MOCK + path, data=json.dumps(body).encode(), method="POST")
    req.add_header("content-type", "application/json")
    req.add_header("authorization", "Bearer sk-fuzz")
    req.add_header("x-goog-api-key", "fuzz")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            try:
                return r.status, r.read()
            except http.client.IncompleteRead as cut:  # a `truncate` fault: what arrived
                return r.status, cut.partial
    except urllib.error.HTTPError as e:
        return e.code, e.read()


MSGS = [{"role": "user", "content": "What is the weather in Paris?"}]
BEHAVIOURS = [
    {},
    {"content": "Hello there friend", "completion_tokens": 5},
    {"tool_call": "get_weather", "tool_arguments": {"city": "Paris", "unit": "c"}},
    {"cached_tokens": 3, "prompt_tokens": 20},
    {"reasoning_tokens": 7},
    {"usage_style": "with_finish"},
    {"usage_style": "every_chunk"},
    {"usage_style": "null"},
    {"usage_style": "string_counts"},
    {"fault": "truncate", "truncate_after_tokens": 2},
]
ERRORS = ["rate_limit_exceeded", "insufficient_quota", "context_length_exceeded", "content_filter",
          "invalid_api_key", "not_found", "server_error", "bad_gateway_html", "overloaded_529", "timeout"]

# upstream_decode: deployment index (tests/fuzz/upstream_decode_fuzz.cpp kTargets) and API.
OPENAI, AZURE, GROQ, ANTHROPIC, GEMINI, VERTEX, BEDROCK, TITAN, COHERE_EMBED, SM_TGI, SM_CHAT, OLLAMA, \
    OLLAMA_CHAT, COHERE, UNSUPPORTED = range(15)
CHAT, MESSAGES, RESPONSES, EMBEDDINGS, COMPLETIONS = range(5)


def decode_seed(deployment, api, kind, body, arg=0, include_usage=True):
    mode = api | (kind << 3) | (0x20 if include_usage else 0)
    put("upstream_decode", bytes([deployment, mode, arg % 256]) + body)


def behaviour_header(b):
    return {"x-mock-behavior": json.dumps(b)} if b else {}


def capture_upstreams():
    for i, b in enumerate(BEHAVIOURS):
        h = behaviour_header(b)
        # OpenAI chat (also read as Azure and groq), body and stream.
        for dep in (OPENAI, AZURE, GROQ) if i < 3 else (OPENAI,):
            st, body = post("/v1/chat/completions", {"model": "gpt-4o", "messages": MSGS}, h)
            decode_seed(dep, CHAT, 0 if st < 400 else 1, body)
            st, body = post("/v1/chat/completions", {"model": "gpt-4o", "messages": MSGS, "stream": True,
                                                     "stream_options": {"include_usage": True}}, h)
            decode_seed(dep, CHAT, 2, body, arg=i * 17)
            put("sse", bytes([(i * 13) % 256]) + body)
        # Anthropic messages: body and stream (also the anthropic_stream and translation seeds).
        st, body = post("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": MSGS}, h)
        decode_seed(ANTHROPIC, CHAT, 0, body)
        decode_seed(ANTHROPIC, MESSAGES, 0, body)
        if st < 400:
            put("anthropic_translate", bytes([0]) + body)
        st, body = post("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": MSGS,
                                         "stream": True}, h)
        decode_seed(ANTHROPIC, CHAT, 2, body, arg=i * 7)
        decode_seed(ANTHROPIC, MESSAGES, 2, body, arg=255)
        put("anthropic_stream", bytes([(i * 29) % 256]) + body)
        put("sse", bytes([(i * 11 + 1) % 256]) + body)
        if i < 5:
            st, body = post("/v1/chat/completions", {"model": "gpt-4o", "messages": MSGS}, h)
            if st < 400:
                put("anthropic_translate", bytes([1]) + body)
            # Gemini / Vertex.
            st, body = post("/v1beta/models/gemini-2.5-flash:generateContent",
                            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, h)
            decode_seed(GEMINI, CHAT, 0 if st < 400 else 1, body)
            st, body = post("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, h)
            decode_seed(GEMINI, CHAT, 2, body, arg=i)
            decode_seed(VERTEX, CHAT, 2, body, arg=64)
            put("sse", bytes([(i * 3 + 2) % 256]) + body)
            # Bedrock Converse (JSON) and ConverseStream (AWS event stream).
            conv = {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}
            st, body = post("/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse", conv, h)
            decode_seed(BEDROCK, CHAT, 0 if st < 400 else 1, body)
            st, body = post("/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream", conv, h)
            decode_seed(BEDROCK, CHAT, 2, body, arg=i * 31)
            put("aws_eventstream", bytes([(i * 5) % 256]) + body)
            # SageMaker: TGI and OpenAI-compatible containers.
            st, body = post("/endpoints/tgi-endpoint/invocations", {"inputs": "hi", "parameters": {}}, h)
            decode_seed(SM_TGI, CHAT, 0 if st < 400 else 1, body)
            st, body = post("/endpoints/tgi-endpoint/invocations-response-stream",
                            {"inputs": "hi", "parameters": {}, "stream": True}, h)
            decode_seed(SM_TGI, CHAT, 2, body, arg=i)
            put("aws_eventstream", bytes([(i * 9 + 1) % 256]) + body)
            st, body = post("/endpoints/chat-endpoint/invocations-response-stream",
                            {"model": "x", "messages": MSGS, "stream": True}, h)
            decode_seed(SM_CHAT, CHAT, 2, body, arg=i)
            # Ollama chat and generate, Cohere v2.
            st, body = post("/api/chat", {"model": "llama3.2", "messages": MSGS, "stream": False}, h)
            decode_seed(OLLAMA_CHAT, CHAT, 0 if st < 400 else 1, body)
            st, body = post("/api/chat", {"model": "llama3.2", "messages": MSGS, "stream": True}, h)
            decode_seed(OLLAMA_CHAT, CHAT, 2, body, arg=i)
            st, body = post("/api/generate", {"model": "llama3.2", "prompt": "hi", "stream": True}, h)
            decode_seed(OLLAMA, CHAT, 2, body, arg=i)
            st, body = post("/v2/chat", {"model": "command-r-plus", "messages": MSGS}, h)
            decode_seed(COHERE, CHAT, 0 if st < 400 else 1, body)
            st, body = post("/v2/chat", {"model": "command-r-plus", "messages": MSGS, "stream": True}, h)
            decode_seed(COHERE, CHAT, 2, body, arg=i)
            put("sse", bytes([(i * 5 + 3) % 256]) + body)
            # Responses API and legacy completions (OpenAI).
            st, body = post("/v1/responses", {"model": "gpt-4o", "input": "hi"}, h)
            decode_seed(OPENAI, RESPONSES, 0 if st < 400 else 1, body)
            st, body = post("/v1/responses", {"model": "gpt-4o", "input": "hi", "stream": True}, h)
            decode_seed(OPENAI, RESPONSES, 2, body, arg=i)
            st, body = post("/v1/completions", {"model": "gpt-3.5-turbo-instruct", "prompt": "hi", "stream": True}, h)
            decode_seed(OPENAI, COMPLETIONS, 2, body, arg=i)
    # Embeddings of every provider.
    for path, body, dep in [
        ("/v1/embeddings", {"model": "text-embedding-3-small", "input": ["a", "b"]}, OPENAI),
        ("/v1beta/models/text-embedding-004:embedContent", {"content": {"parts": [{"text": "a"}]}}, GEMINI),
        ("/model/amazon.titan-embed-text-v2%3A0/invoke", {"inputText": "a"}, TITAN),
        ("/model/cohere.embed-english-v3/invoke", {"texts": ["a"], "input_type": "search_document"}, COHERE_EMBED),
        ("/api/embed", {"model": "nomic-embed-text", "input": ["a"]}, OLLAMA),
        ("/v2/embed", {"model": "embed-english-v3.0", "texts": ["a"], "input_type": "search_document",
                       "embedding_types": ["float"]}, COHERE),
    ]:
        st, raw = post(path, body)
        decode_seed(dep, EMBEDDINGS, 0 if st < 400 else 1, raw)
    # Error bodies of both families, by name.
    for e in ERRORS:
        h = behaviour_header({"error": e})
        st, body = post("/v1/chat/completions", {"model": "gpt-4o", "messages": MSGS}, h)
        decode_seed(OPENAI, CHAT, 1, body, arg=(st - 400) % 200)
        st, body = post("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": MSGS}, h)
        decode_seed(ANTHROPIC, CHAT, 1, body, arg=(st - 400) % 200)
        st, body = post("/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
                        {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, h)
        decode_seed(BEDROCK, CHAT, 1, body, arg=(st - 400) % 200)
        st, body = post("/v1beta/models/gemini-2.5-flash:generateContent",
                        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, h)
        decode_seed(GEMINI, CHAT, 1, body, arg=(st - 400) % 200)
    st, body = post("/v1beta/models/gemini-2.5-flash:generateContent",
                    {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, behaviour_header({"block_reason": "SAFETY"}))
    decode_seed(GEMINI, CHAT, 0, body)
    # OpenAI-compatible quirks (tool-call indexes, nulls, no [DONE]).
    for q in ["no_index", "same_index", "args_one_chunk", "no_role", "nulls", "finish_stop"]:
        st, body = post("/v1/chat/completions", {"model": "llama?quirks=" + q + "&tool_calls=2", "messages": MSGS,
                                                 "stream": True, "stream_options": {"include_usage": True}})
        decode_seed(GROQ, CHAT, 2, body, arg=3)
    st, body = post("/v1/chat/completions", {"model": "llama?fault=no_done", "messages": MSGS, "stream": True})
    decode_seed(GROQ, CHAT, 2, body)
    st, body = post("/v1/chat/completions", {"model": "gpt-4o?tool_calls=3", "messages": MSGS})
    put("anthropic_translate", bytes([1]) + body)


def write_requests():
    chat_requests = [
        {"model": "gpt-4o", "messages": MSGS},
        {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."}, *MSGS], "max_tokens": 64,
         "temperature": 0.2, "stop": ["\n\n"], "user": "u-1"},
        {"model": "gpt-4o", "stream": True, "stream_options": {"include_usage": True}, "n": 2,
         "messages": [{"role": "user", "content": [{"type": "text", "text": "Describe"},
                                                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]},
        {"model": "gpt-4o", "tools": [{"type": "function", "function": {"name": "get_weather", "description": "w",
                                                                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
         "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "parallel_tool_calls": False,
         "messages": [*MSGS, {"role": "assistant", "content": None, "tool_calls": [
             {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                      {"role": "tool", "tool_call_id": "call_1", "content": "18C"}]},
        {"model": "gpt-4o", "max_completion_tokens": 100, "messages": [{"role": "developer", "content": "x"},
                                                                      {"role": "user", "content": "a"},
                                                                      {"role": "user", "content": "b"}]},
    ]
    anthropic_requests = [
        {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": MSGS},
        {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": [{"type": "text", "text": "Be brief."}],
         "stop_sequences": ["END"], "temperature": 0.5, "stream": True, "metadata": {"user_id": "u"},
         "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                   {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]},
        {"model": "claude-sonnet-4-5", "max_tokens": 512,
         "tools": [{"name": "get_weather", "description": "w", "input_schema": {"type": "object"}}],
         "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
         "messages": [*MSGS, {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                                                              {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": [{"type": "text", "text": "18C"}]},
                                                   {"type": "text", "text": "Thanks"}]}]},
        {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [
            {"role": "user", "content": [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "ok"}]}]},
    ]
    for r in chat_requests:
        put("anthropic_translate", bytes([3]) + json.dumps(r).encode())
        put("json_body", bytes([0]) + json.dumps(r).encode())
    for r in anthropic_requests:
        put("anthropic_translate", bytes([2]) + json.dumps(r).encode())
        put("json_body", bytes([0]) + json.dumps(r).encode())
    for r in [
        {"model": "text-embedding-3-small", "input": "hello", "encoding_format": "float", "dimensions": 256},
        {"model": "text-embedding-3-small", "input": ["a", "b", "c"], "user": "u"},
        {"model": "text-embedding-3-small", "input": [[1, 2, 3], [4, 5]], "encoding_format": "base64"},
        {"model": "gpt-3.5-turbo-instruct", "prompt": "Say", "max_tokens": 7, "n": 2, "best_of": 3, "logprobs": 2},
        {"model": "gpt-3.5-turbo-instruct", "prompt": ["a", "b"], "stream": True, "stream_options": {"include_usage": True},
         "echo": True, "suffix": "z"},
        {"model": "gpt-3.5-turbo-instruct", "prompt": [[1, 2], [3]]},
    ]:
        put("json_body", bytes([0]) + json.dumps(r).encode())
    for raw in ["", "{}", "[]", "null", '{"a":' * 70 + "1" + "}" * 70, '{"model":"x","messages":[]} trailing',
                '{"a":1,"a":2}', '{"s":"\\ud800"}', '{"n":1e400}', '{"n":-0.0,"b":true}']:
        put("json_body", bytes([3]) + raw.encode())

    admin = [
        {"key_alias": "team-a-key", "max_budget": 10.5, "budget_duration": "30d", "models": ["gpt-4o"],
         "metadata": {"team": "a"}, "tags": ["prod", "eu"], "duration": "7d", "rpm_limit": 100, "blocked": False},
        {"user_id": "alice@example.com", "max_budget": "0.0005", "soft_budget": 1e-3, "spend": 0},
        {"budget_limits": [{"budget_duration": "1d", "max_budget": 1.5}, {"budget_duration": "1mo", "max_budget": "20"}]},
        {"model_max_budget": {"gpt-4o": {"budget_duration": "1d", "max_budget": 2}, "claude": {"max_budget": 0.1}}},
        {"team_id": "t" * 300, "max_budget": -1, "duration": "1x", "tags": [1, 2]},
        {"max_budget": 9.3e18, "budget_limits": [{"budget_duration": "1d"}], "model_max_budget": []},
        {"budget_limits": [{"budget_duration": "1d", "max_budget": 1}, {"budget_duration": "24h", "max_budget": 2}]},
    ]
    for a in admin:
        put("admin_fields", json.dumps(a))
    for s in ["1h", "30d", "1mo", "2w", "0.0000000001", "1e-3", "+1.25", "2025-01-31T12:00:00.123+02:00",
              "2025-01-31", "/key/info?key=sk-%41%2B+b&x=1", "99999999999999999999d", "9223372036.854775807"]:
        put("admin_fields", s)


def write_framing():
    chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5})
    base = ["Host: localhost", "Authorization: Bearer sk-1", "Content-Type: application/json"]

    def head(lines, line="POST /v1/chat/completions HTTP/1.1"):
        return line + "\r\n" + "\r\n".join(lines) + "\r\n\r\n"

    def chunked(body, ext=""):
        return f"{len(body):x}{ext}\r\n{body}\r\n0\r\n\r\n"

    smuggled = head(base + [f"Content-Length: {len(chat)}"]) + chat
    vectors = [
        head(base + [f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["Transfer-Encoding: chunked"]) + chunked(chat),
        head(base + ["Transfer-Encoding: chunked"]) + chunked(chat, ";a=b"),
        head(["Host: a"], "GET /health HTTP/1.1") + head(["Host: a"], "GET /metrics HTTP/1.1"),
        head([], "GET / HTTP/1.0"),
        head(["Host: a", "Connection: close"], "GET /v1/models HTTP/1.1"),
        head(base + ["Expect: 100-continue", f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["Transfer-Encoding: chunked, gzip"]) + chunked(chat) + smuggled,
        head(base + ["Transfer-Encoding: gzip, chunked"]) + chunked(chat) + smuggled,
        head(base + ["Transfer-Encoding: chunked, chunked"]) + chunked(chat) + smuggled,
        head(base + ["Transfer-Encoding: chunked,"]) + chunked(chat),
        head(base + [f"Content-Length: {len(chat) + 10}", "Transfer-Encoding: chunked"]) + chunked(chat) + smuggled,
        head(base + ["Transfer-Encoding: chunked", "Content-Length: 4"]) + chunked(chat) + smuggled,
        head(base + ["Transfer-Encoding: chunked", "Transfer-Encoding: x"]) + chunked(chat) + smuggled,
        head(base + ["Transfer-Encoding: xchunked", f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["Transfer-Encoding : chunked", f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["Transfer-Encoding: identity", " chunked", f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["X-Note: a\rb", f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["X-Note: a\0b", f"Content-Length: {len(chat)}"]) + chat,
        head(base + [": a", f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["Host: evil.example", f"Content-Length: {len(chat)}"]) + chat,
        head(base[1:] + [f"Content-Length: {len(chat)}"]) + chat,
        head(base + [f"Content-Length: {len(chat)}", "Content-Length: 4"]) + chat,
        head(base + [f"Content-Length: {len(chat)}, {len(chat)}"]) + chat,
        head(base + [f"Content-Length: +{len(chat)}"]) + chat,
        head(base + ["Content-Length: 99999999"]) + chat,
        head(base + ["Transfer-Encoding: chunked"]) + "1" + "0" * 20 + "\r\n" + chat + "\r\n0\r\n\r\n",
        head(base + ["Transfer-Encoding: chunked"]) + chunked(chat, ";" + "e" * 5000),
        head(base + ["Transfer-Encoding: chunked"]) + f"{len(chat):x}\r\n{chat}\r\n0\r\nHost: evil\r\n\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        head(base + [f"x-{i}: v" for i in range(130)] + [f"Content-Length: {len(chat)}"]) + chat,
        head(base + ["Transfer-Encoding: chunked"], "POST /v1/chat/completions HTTP/1.0") + chunked(chat),
        "GET / HTTP/1.1\nHost: a\n\n",
        "GET / HTTP/1.1\r\nHost: a\r\n" + "X: " + "a" * 9000 + "\r\n\r\n",
    ]
    for i, v in enumerate(vectors):
        put("request_framing", bytes([0]) + v.encode("latin-1"))
        put("request_framing", bytes([1 + i * 7 % 250]) + v.encode("latin-1"))


def write_sse_and_configs():
    for s in ["data: {\"a\":1}\n\n", "event: ping\ndata: {}\n\n: comment\r\n\r\n",
              "\ufeffdata: a\r\ndata: b\r\rid: 7\nretry: 1500\ndata\n\n", "data: [DONE]\n\n",
              "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: only\n\n"]:
        put("sse", bytes([5]) + s.encode())
    fixtures = os.path.join(ROOT, "tests", "fixtures", "litellm-configs")
    for n in sorted(os.listdir(fixtures)):
        p = os.path.join(fixtures, n)
        if os.path.isfile(p):
            put("config_loader", open(p, "rb").read())
    put("config_loader", open(os.path.join(ROOT, "tests", "unit", "config", "fixtures", "litellm_docs.yaml"), "rb").read())
    for ex in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        p = os.path.join(ROOT, "examples", ex)
        if ex.endswith(".yaml") and os.path.getsize(p) < 16384:
            put("config_loader", open(p, "rb").read())
    put("config_loader", "0.0000025\n")
    put("config_loader", "2.5e-06\nmodel_list: []\n")

    prices = open(os.path.join(ROOT, "data", "prices.yaml")).read()
    # data/prices.yaml in slices of a few entries (the whole file is large for a seed).
    lines = prices.split("\n")
    header_end = next(i for i, l in enumerate(lines) if l.startswith("models:")) + 1
    entries, cur = [], []
    for l in lines[header_end:]:
        if l.startswith("  ") and not l.startswith("    ") and cur:
            entries.append(cur)
            cur = []
        cur.append(l)
    if cur:
        entries.append(cur)
    for i in range(0, min(len(entries), 60), 6):
        put("price_file", "\n".join(lines[:header_end] + sum(entries[i:i + 6], [])) + "\n")
    litellm = json.load(open(os.path.join(ROOT, "tests", "unit", "budget", "fixtures", "litellm_small.json")))
    items = list(litellm.items())
    for i in range(0, len(items), 3):
        put("price_file", json.dumps(dict(items[i:i + 3]), indent=1))
    put("price_file", json.dumps(litellm))


def journal_frame(jseq, rid, kind, amount, actual, at_ms, settle_kind, request_id, model, scopes):
    """One ledger journal frame (src/store/journal/journal_codec.hpp)."""
    import struct
    import zlib

    def s(x):
        b = x.encode()
        return struct.pack("<I", len(b)) + b
    p = struct.pack("<QQB", jseq, rid, kind) + struct.pack("<qqq", amount, actual, at_ms)
    p += s(settle_kind) + s(request_id) + s(model) + struct.pack("<I", len(scopes))
    for k, i, ws, we, per in scopes:
        p += s(k) + s(i) + struct.pack("<qq", ws, we) + s(per)
    return struct.pack("<II", len(p), zlib.crc32(p)) + p


def write_journal():
    scopes = [("key", "h1", 0, 0, ""), ("key_window", "h1", 86400000, 172800000, "1d"), ("team", "t", 0, 0, "")]
    seg = b""
    for j in range(1, 7):
        rid = (j + 1) // 2
        if j % 2:
            seg += journal_frame(j, rid, 0, 5000 * j, 0, 1000 + j, "", "req-%d" % rid, "gpt-4o", scopes[: j % 4])
        else:
            seg += journal_frame(j, rid, 1, 5000 * j, 1234, 2000 + j, "actual", "", "", [])
    put("journal_decode", seg)
    put("journal_decode", seg[: len(seg) - 7])  # a torn tail
    put("journal_decode", journal_frame(41, 9, 1, 1, 1, 1, "unknown", "r", "m", scopes))


if __name__ == "__main__":
    for t in ["upstream_decode", "sse", "anthropic_stream", "anthropic_translate", "aws_eventstream", "json_body",
              "admin_fields", "request_framing", "config_loader", "price_file", "journal_decode"]:
        shutil.rmtree(os.path.join(CORPUS, t), ignore_errors=True)
    if MOCK:
        capture_upstreams()
    write_requests()
    write_framing()
    write_sse_and_configs()
    write_journal()
    for t in sorted(os.listdir(CORPUS)):
        print(t, len(os.listdir(os.path.join(CORPUS, t))))
