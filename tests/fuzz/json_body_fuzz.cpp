// Fuzz target: the request body decoder (api/json_body.hpp: parse_json_object, with the
// gateway's depth limits) and the decoders of the non-chat OpenAI endpoints that read the body
// next (api/operation_decode.hpp: decode_embeddings, decode_completions).
//
// Input: byte 0 = depth limit (64: client bodies; 32: admin bodies) and whether an empty body is
// `{}`, then the body.
// Properties: an accepted body serialises to JSON that parses back to the same object (doubles
// within 1e-14: Boost.JSON 1.81 reads decimals approximately) (so the
// pass-through rewrite cannot emit broken JSON), and no accepted body nests deeper than the
// limit; a refused body is a 400; after a successful decode, the rewritten body (the bound the
// reservation pays for is written into it) still serialises to parseable JSON, and a completions
// call has max_tokens >= 1 written in.
#include <cmath>

#include <boost/json/object.hpp>

#include "api/json_body.hpp"
#include "api/operation_decode.hpp"
#include "fuzz_support.hpp"

namespace {

namespace json = boost::json;

unsigned depth_of(const json::value& v) {
  unsigned d = 0;
  if (const auto* o = v.if_object())
    for (const auto& kv : *o) d = std::max(d, depth_of(kv.value()));
  else if (const auto* a = v.if_array())
    for (const auto& x : *a) d = std::max(d, depth_of(x));
  else
    return 0;
  return d + 1;
}

/// Equal, but for doubles, which may differ in their last digits: Boost.JSON 1.81 does not read
/// decimal text into the nearest double (its `precise` number mode came later), so a double
/// written and read again can move by an ulp or two.
bool same(const json::value& a, const json::value& b) {
  if (a.is_double() && b.is_double()) {
    const double x = a.get_double(), y = b.get_double();
    return x == y || std::fabs(x - y) <= 1e-14 * std::max(std::fabs(x), std::fabs(y));
  }
  if (a.kind() != b.kind()) return false;
  if (const auto* o = a.if_object()) {
    const auto& p = b.get_object();
    if (o->size() != p.size()) return false;
    for (auto i = o->begin(), j = p.begin(); i != o->end(); ++i, ++j)
      if (i->key() != j->key() || !same(i->value(), j->value())) return false;
    return true;
  }
  if (const auto* x = a.if_array()) {
    const auto& y = b.get_array();
    if (x->size() != y.size()) return false;
    for (std::size_t i = 0; i < x->size(); ++i)
      if (!same((*x)[i], y[i])) return false;
    return true;
  }
  return a == b;
}

void check_reparses(const json::object& o) {
  const auto text = json::serialize(o);
  const auto back = tollgate::fuzz::parse_json(text);
  TG_FUZZ_CHECK(back.has_value() && back->is_object());
  TG_FUZZ_CHECK(same(*back, json::value(o)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = tollgate::fuzz::as_text(data, size);
  const std::uint8_t flags = tollgate::fuzz::take_byte(in);
  const unsigned max_depth = (flags & 1) ? 32 : 64;
  const bool empty_is_object = (flags & 2) != 0;

  auto body = tollgate::api::parse_json_object(in, max_depth, empty_is_object);
  if (!body) {
    TG_FUZZ_CHECK(body.error().status == 400);
    return 0;
  }
  TG_FUZZ_CHECK(depth_of(json::value(*body)) <= max_depth);
  check_reparses(*body);

  {
    tollgate::pipeline::ChatCall call;
    auto b = *body;
    if (!tollgate::api::decode_embeddings(b, call)) check_reparses(b);
  }
  {
    tollgate::pipeline::ChatCall call;
    auto b = *body;
    if (!tollgate::api::decode_completions(b, call)) {
      check_reparses(b);
      const auto* mt = b.if_contains("max_tokens");
      TG_FUZZ_CHECK(mt != nullptr);
      TG_FUZZ_CHECK(mt->is_int64() ? mt->get_int64() >= 1
                                   : mt->is_uint64() || (mt->is_double() && mt->get_double() >= 1));
    }
  }
  return 0;
}
