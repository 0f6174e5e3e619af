#include "http/response_parser.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

namespace tollgate::http {

namespace bhttp = boost::beast::http;

namespace {
/// Room for the head of a typical answer (a dozen or two fields) without growing.
constexpr std::size_t kHeadText = 1024;
constexpr std::size_t kHeadFields = 24;
}  // namespace

ResponseParser::ResponseParser() {
  text_.reserve(kHeadText);
  fields_.reserve(kHeadFields);
}

std::string_view ResponseParser::header(std::string_view name) const noexcept {
  for (const auto& f : fields_) {
    const std::string_view n(text_.data() + f.name_at, f.name_size);
    if (boost::beast::iequals(n, name)) return std::string_view(text_.data() + f.value_at, f.value_size);
  }
  return {};
}

void ResponseParser::on_request_impl(bhttp::verb, boost::beast::string_view, boost::beast::string_view, int,
                                     boost::beast::error_code& ec) {
  ec = bhttp::error::bad_status;  // never called: this parser reads responses
}

void ResponseParser::on_response_impl(int code, boost::beast::string_view, int version, boost::beast::error_code&) {
  status_ = code;
  version_ = version;
}

void ResponseParser::on_field_impl(bhttp::field, boost::beast::string_view name, boost::beast::string_view value,
                                   boost::beast::error_code&) {
  // A chunked body's trailer fields come here too, after the head: they are not kept (nothing
  // reads them, and the views header() gave out stay valid). The head is at most header_limit()
  // bytes (the parser refuses more), so its offsets fit 32 bits.
  if (is_header_done()) return;
  Field f;
  f.name_at = static_cast<std::uint32_t>(text_.size());
  f.name_size = static_cast<std::uint32_t>(name.size());
  text_.append(name.data(), name.size());
  f.value_at = static_cast<std::uint32_t>(text_.size());
  f.value_size = static_cast<std::uint32_t>(value.size());
  text_.append(value.data(), value.size());
  fields_.push_back(f);
}

std::size_t ResponseParser::on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) {
  if (out_ == nullptr) {
    ec = bhttp::error::unexpected_body;
    return 0;
  }
  out_->append(body.data(), body.size());
  return body.size();
}

std::size_t ResponseParser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body, boost::beast::error_code& ec) {
  return on_body_impl(body, ec);
}

}  // namespace tollgate::http
