#pragma once
/// Reading OpenAI-format error bodies `{"error":{"message","type","param","code"}}`
/// (REFERENCE.md "OpenAI"); also used for Azure and OpenAI-compatible servers.

#include <string_view>

#include <boost/json/object.hpp>

#include "policy/failure.hpp"

namespace tollgate::providers {

/// From an `error` object: type, code (string or number), message.
policy::Outcome outcome_from_openai_error(int status, const boost::json::object& error);
/// From a whole error body; a body that is not an OpenAI error (HTML 502 page, text) keeps the
/// status and gets a message saying what arrived.
policy::Outcome outcome_from_openai_body(int status, std::string_view body);

}  // namespace tollgate::providers
