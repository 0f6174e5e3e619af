#include "budget/inline_data.hpp"
#include "budget/media_size.hpp"

#include "media_fixtures.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace tollgate::budget {
namespace {

using namespace test;
using namespace std::literals;

// ------------------------------------------------------------------ inline data

TEST(InlineData, ParsesBase64DataUrls) {
  auto d = parse_base64_data_url("data:image/png;base64,iVBORw0KGgo=");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->media_type, "image/png");
  EXPECT_EQ(d->base64, "iVBORw0KGgo=");
  d = parse_base64_data_url("DATA:application/pdf;name=x.pdf;BASE64,JVBERi0=");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->media_type, "application/pdf");
  EXPECT_EQ(d->base64, "JVBERi0=");
  d = parse_base64_data_url("data:;base64,AAAA");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->media_type, "");
  EXPECT_FALSE(parse_base64_data_url("https://example.com/cat.png"));
  EXPECT_FALSE(parse_base64_data_url("data:text/plain,hello%20world"));  // not base64
  EXPECT_FALSE(parse_base64_data_url("data:image/png;base64"));          // no comma
  EXPECT_FALSE(parse_base64_data_url(""));
}

TEST(InlineData, DecodedSizeBound) {
  EXPECT_EQ(base64_decoded_size_bound(""), 0);
  EXPECT_EQ(base64_decoded_size_bound("QQ=="), 1);
  EXPECT_EQ(base64_decoded_size_bound("QUI="), 2);
  EXPECT_EQ(base64_decoded_size_bound("QUJD"), 3);
  for (std::size_t n = 0; n < 50; ++n) {
    const Bytes b(n, 0x5A);
    EXPECT_EQ(base64_decoded_size_bound(base64(b)), static_cast<std::int64_t>(n)) << n;
  }
}

TEST(InlineData, ReaderDecodesSkipsWhitespaceAndStopsAtGarbage) {
  Bytes b;
  for (int i = 0; i < 1000; ++i) b.push_back(static_cast<std::uint8_t>(i * 7));
  const std::string plain = base64(b);
  // The same data with MIME line breaks and spaces, and URL-safe characters.
  std::string wrapped;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    if (i > 0 && i % 76 == 0) wrapped += "\r\n";
    if (i % 13 == 0) wrapped += ' ';
    char c = plain[i];
    if (c == '+') c = '-';
    if (c == '/') c = '_';
    wrapped += c;
  }
  for (const std::string& s : {plain, wrapped}) {
    Base64Reader r(s);
    std::vector<std::uint8_t> out(1000);
    // Mixed access: single bytes, a skip, odd-sized reads.
    ASSERT_EQ(r.next(), b[0]);
    ASSERT_TRUE(r.skip(10));
    ASSERT_EQ(r.read(std::span<std::uint8_t>(out.data(), 7)), 7u);
    for (int i = 0; i < 7; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(11 + i)]);
    const std::size_t rest = r.read(out);
    EXPECT_EQ(rest, 1000u - 18);
    for (std::size_t i = 0; i < rest; ++i) ASSERT_EQ(out[i], b[18 + i]) << i;
    EXPECT_EQ(r.position(), 1000u);
    EXPECT_FALSE(r.next());
    EXPECT_FALSE(r.failed());
  }
  Base64Reader bad("QUJD!!!!QUJD");
  std::uint8_t buf[16];
  EXPECT_EQ(bad.read(buf), 3u);
  EXPECT_TRUE(bad.failed());
  Base64Reader padded("QQ==QUJD");  // decoding stops at padding
  EXPECT_EQ(padded.read(buf), 1u);
  EXPECT_FALSE(padded.skip(1));
}

// ------------------------------------------------------------------ images

void expect_size(const Bytes& b, std::int64_t w, std::int64_t h) {
  const auto s = read_image_size(base64(b));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, w);
  EXPECT_EQ(s->height, h);
}

TEST(ImageSize, ReadsEveryFormat) {
  expect_size(png(1024, 768), 1024, 768);
  expect_size(png(1, 70000), 1, 70000);
  expect_size(jpeg(640, 480), 640, 480);
  expect_size(jpeg(4032, 3024, 3000, true), 4032, 3024);  // progressive, a big APP1 full of 0xFF 0xC0
  expect_size(gif(320, 200), 320, 200);
  expect_size(webp_vp8(800, 600), 800, 600);
  expect_size(webp_vp8l(16383, 1), 16383, 1);
  expect_size(webp_vp8x(16'000'000, 3), 16'000'000, 3);
  EXPECT_EQ(sniff_media_kind(base64(png(1, 1))), MediaKind::png);
  EXPECT_EQ(sniff_media_kind(base64(jpeg(1, 1))), MediaKind::jpeg);
  EXPECT_EQ(sniff_media_kind(base64(gif(1, 1))), MediaKind::gif);
  EXPECT_EQ(sniff_media_kind(base64(webp_vp8(1, 1))), MediaKind::webp);
}

TEST(ImageSize, AppleCgbiPng) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  be32(b, 4);
  append(b, "CgBI");
  b.insert(b.end(), {0x50, 0x00, 0x20, 0x02});
  be32(b, 0);
  const Bytes ihdr = png(300, 200);
  b.insert(b.end(), ihdr.begin() + 8, ihdr.end());
  expect_size(b, 300, 200);
}

TEST(ImageSize, UnreadableIsNullopt) {
  EXPECT_FALSE(read_image_size(""));
  EXPECT_FALSE(read_image_size("!!!!"));
  EXPECT_FALSE(read_image_size(base64(bytes("hello world, not an image"))));
  EXPECT_FALSE(read_image_size(base64(png(0, 10))));  // zero dimension
  Bytes truncated = png(10, 10);
  truncated.resize(20);
  EXPECT_FALSE(read_image_size(base64(truncated)));
  Bytes no_sof = {0xFF, 0xD8, 0xFF, 0xDA, 0, 2, 0xFF, 0xD9};  // SOS before any frame header
  EXPECT_FALSE(read_image_size(base64(no_sof)));
  Bytes dnl = jpeg(100, 0);  // height deferred to a DNL marker
  EXPECT_FALSE(read_image_size(base64(dnl)));
  EXPECT_FALSE(read_image_size(base64(bytes("RIFF\0\0\0\0WEBPVP8 \0\0\0\0 short"sv))));
}

// ------------------------------------------------------------------ PDF

std::optional<std::int64_t> pages_of(const std::string& pdf) { return read_pdf_page_count(base64(bytes(pdf))); }

TEST(PdfPages, CountAndPageObjects) {
  EXPECT_EQ(pages_of(pdf(3, 3)), 3);
  EXPECT_EQ(pages_of(pdf(12, 0)), 12);  // /Count only (page objects elsewhere)
  EXPECT_EQ(pages_of(pdf(-1, 4)), 4);   // /Page objects only
  EXPECT_EQ(pages_of(pdf(2, 5)), 5);    // the larger of the two
  EXPECT_EQ(pages_of(pdf(-1, 0)), std::nullopt);  // neither
  EXPECT_EQ(sniff_media_kind(base64(bytes(pdf(1, 1)))), MediaKind::pdf);
}

TEST(PdfPages, IntermediateNodesAndOutlines) {
  std::string extra =
      "20 0 obj\n<< /Type /Pages /Parent 2 0 R /Kids [] /Count 2 >>\nendobj\n"
      "21 0 obj\n<< /Type /Outlines /Count 99 >>\nendobj\n"  // an outline's /Count is no page count
      "22 0 obj\n<</Count 7/Type/Pages>>\nendobj\n";           // keys in any order, no spaces
  EXPECT_EQ(pages_of(pdf(-1, 1, extra)), 7);
}

TEST(PdfPages, SkipsStreamsStringsAndComments) {
  std::string extra =
      "30 0 obj\n<< /Length 60 >>\nstream\n<< /Type /Page >> << /Type /Pages /Count 500 >> >> >> <<\nendstream\nendobj\n"
      "31 0 obj\n(a string with /Type /Page \\) and (nested /Type /Page) parens)\nendobj\n"
      "% a comment /Type /Page\n"
      "32 0 obj\n<48656C6C6F> \nendobj\n";
  EXPECT_EQ(pages_of(pdf(2, 2, extra)), 2);
}

TEST(PdfPages, DecodesNameEscapes) {
  // "/Pa#67e" is "/Page": a document cannot hide its pages behind name escapes.
  std::string extra = "40 0 obj\n<< /Ty#70e /Pa#67e >>\nendobj\n41 0 obj\n<< /Type /Pa#67e >>\nendobj\n";
  EXPECT_EQ(pages_of(pdf(-1, 1, extra)), 3);
}

TEST(PdfPages, ObjectStreamsMakeTheCountUnknown) {
  // A signed PDF can show one uncompressed /Page while the others live in object streams.
  std::string extra = "50 0 obj\n<< /Type /ObjStm /N 40 /First 300 /Length 10 >>\nstream\nxxxxxxxxxx\nendstream\nendobj\n";
  EXPECT_EQ(pages_of(pdf(-1, 1, extra)), std::nullopt);
  EXPECT_EQ(pages_of(pdf(40, 1, extra)), std::nullopt);
}

TEST(PdfPages, NotAPdf) {
  EXPECT_EQ(read_pdf_page_count(base64(png(10, 10))), std::nullopt);
  EXPECT_EQ(read_pdf_page_count("@@@@"), std::nullopt);
  EXPECT_EQ(read_pdf_page_count(""), std::nullopt);
  // Junk before the header is tolerated (up to 1 KiB).
  EXPECT_EQ(pages_of(std::string(100, ' ') + pdf(6, 0)), 6);
}

TEST(PdfPages, LargeFileIsOnePass) {
  // ~6 MB of stream data: scanned in one pass without copying the base64 text.
  std::string big(6'000'000, 'x');
  std::string extra = "60 0 obj\n<< /Length 6000000 >>\nstream\n" + big + "\nendstream\nendobj\n";
  const std::string b64 = base64(bytes(pdf(9, 9, extra)));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(read_pdf_page_count(b64), 9);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 2'000);  // generous: a loaded 2-core VM
}

// ------------------------------------------------------------------ audio

TEST(AudioDuration, WavFromHeader) {
  // 16 kHz mono 16-bit: 32,000 bytes per second.
  EXPECT_EQ(read_audio_duration_ms_bound(base64(wav(16'000, 1, 16, 64'000)), "wav"), 2'000);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(wav(16'000, 1, 16, 64'001)), "wav"), 2'001);  // rounded up
  EXPECT_EQ(read_audio_duration_ms_bound(base64(wav(44'100, 2, 16, 176'400)), "wav"), 1'000);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(wav(8'000, 1, 8, 8'000, 1, true)), "wav"), 1'000);  // LIST chunk first
  // Float and the declared format ignored in favour of the bytes.
  EXPECT_EQ(read_audio_duration_ms_bound(base64(wav(48'000, 1, 32, 192'000, 3)), "mp3"), 1'000);
  // A compressed WAV codec (IMA ADPCM): estimated at 8 kbit/s from its bytes.
  const Bytes adpcm = wav(8'000, 1, 4, 4'000, 0x11);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(adpcm), "wav"), static_cast<std::int64_t>(4'000));
}

TEST(AudioDuration, LyingDataSizeCannotShortenTheClip) {
  Bytes b = wav(16'000, 1, 16, 32'000);
  // Declare a 2-byte data chunk: the 32,000 bytes that follow still count.
  b[40] = 2;
  b[41] = b[42] = b[43] = 0;
  EXPECT_EQ(read_audio_duration_ms_bound(base64(b), "wav"), 1'000);
}

TEST(AudioDuration, Mp3AtTheLowestBitrate) {
  Bytes mp3 = bytes("ID3");
  mp3.resize(2'000, 0);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(mp3), "mp3"), 2'000);  // 2,000 bytes at 1,000 B/s
  Bytes frames = {0xFF, 0xFB, 0x90, 0x64};
  frames.resize(1'000, 0);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(frames), ""), 1'000);
  // Unrecognised bytes declared mp3: still estimated from the size.
  EXPECT_EQ(read_audio_duration_ms_bound(base64(Bytes(3'000, 1)), "mp3"), 3'000);
}

TEST(AudioDuration, UnreadableIsNullopt) {
  EXPECT_EQ(read_audio_duration_ms_bound("", "wav"), std::nullopt);
  EXPECT_EQ(read_audio_duration_ms_bound("!!!!", "wav"), std::nullopt);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(Bytes(100, 1)), "wav"), std::nullopt);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(Bytes(100, 1)), "flac"), std::nullopt);
  Bytes no_fmt = bytes("RIFF\0\0\0\0WAVEdata"sv);
  no_fmt.resize(40, 0);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(no_fmt), "wav"), std::nullopt);
  EXPECT_EQ(read_audio_duration_ms_bound(base64(wav(0, 0, 16, 100)), "wav"), std::nullopt);  // zero rate
}

}  // namespace
}  // namespace tollgate::budget
