// escape_wire_text: what a hostile string from the wire becomes before it reaches a log line, an
// event or a reply.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "wire/wire_text.hpp"

namespace slicestream {
namespace {

// True when `text` is one line of printable, valid UTF-8 without escape or control characters.
bool is_safe_line(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) return false;
  }
  // Valid UTF-8 (a round trip through the escaper changes nothing but backslashes).
  std::string doubled;
  for (char c : text)
    doubled += c == '\\' ? std::string("\\\\") : std::string(1, c);
  return escape_wire_text(text, text.size()) == doubled;
}

TEST(WireText, PrintableUtf8StaysAsItIs) {
  const std::string text = "flexray scan 7: Zürich, 0.25 µm, 断层扫描, ok";
  EXPECT_EQ(escape_wire_text(text), text);
}

TEST(WireText, NewlinesCannotForgeLogLines) {
  EXPECT_EQ(escape_wire_text("scan\n[2024-01-01 00:00:00] [error] forged\r\tx"),
            "scan\\n[2024-01-01 00:00:00] [error] forged\\r\\tx");
}

TEST(WireText, AnsiEscapesAndControlBytesBecomeVisible) {
  EXPECT_EQ(escape_wire_text("\x1b[2J\x1b[31mred\x07\x7f"), "\\x1b[2J\\x1b[31mred\\x07\\x7f");
  EXPECT_EQ(escape_wire_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_wire_text("back\\slash"), "back\\\\slash");
}

TEST(WireText, InvalidUtf8IsEscapedBytewise) {
  EXPECT_EQ(escape_wire_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_wire_text("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(escape_wire_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(escape_wire_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // > U+10FFFF
  EXPECT_EQ(escape_wire_text("ok\xe2\x82"), "ok\\xe2\\x82");                // truncated
}

TEST(WireText, InvisibleControlsAreShownAsCodePoints) {
  EXPECT_EQ(escape_wire_text("\xc2\x9b"), "\\u009b");  // C1 CSI
  EXPECT_EQ(escape_wire_text("a\xe2\x80\xae"
                             "b"),
            "a\\u202eb");                                    // right-to-left override
  EXPECT_EQ(escape_wire_text("\xe2\x80\xa8"), "\\u2028");    // line separator
  EXPECT_EQ(escape_wire_text("\xef\xbb\xbfx"), "\\ufeffx");  // byte order mark
}

TEST(WireText, LongStringsAreCutAtACharacterBoundary) {
  EXPECT_EQ(escape_wire_text(std::string(1000, 'a'), 10), "aaaaaaaaaa...(990 more bytes)");
  // "ü" is two bytes: a cut after 3 bytes keeps "aü" and leaves the rest.
  EXPECT_EQ(escape_wire_text("aüü", 4), "aü...(2 more bytes)");
  EXPECT_EQ(escape_wire_text("", 10), "");
}

TEST(WireText, RandomBytesAlwaysGiveOneSafeLine) {
  std::random_device device;
  const unsigned seed = device();
  SCOPED_TRACE(seed);
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 2000; ++round) {
    std::string text(static_cast<std::size_t>(byte(random) % 64), '\0');
    for (char& c : text)
      c = static_cast<char>(byte(random));
    const std::string escaped = escape_wire_text(text);
    ASSERT_TRUE(is_safe_line(escaped)) << escaped;
  }
}

}  // namespace
}  // namespace slicestream
