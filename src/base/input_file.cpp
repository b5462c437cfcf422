// SPDX-License-Identifier: MIT
#include "base/input_file.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace optadvisor {
namespace {

/// Thrown by the parser callback to stop at the first value nested too deep.
struct TooDeep {};

}  // namespace

std::optional<std::string> read_input_file(const std::string& path, std::string& why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // status() follows symbolic links; a FIFO or device is refused before it is opened (opening a FIFO
  // blocks, and /dev/zero never ends).
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    why = "does not exist";
    return std::nullopt;
  }
  if (fs::is_directory(status)) {
    why = "is a directory, not a file";
    return std::nullopt;
  }
  if (!fs::is_regular_file(status)) {
    why = "is not a regular file";
    return std::nullopt;
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxInputFileBytes) {
    why = ec ? "cannot be read" : fmt::format("is larger than the {} MiB limit", kMaxInputFileBytes >> 20);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot be read";
    return std::nullopt;
  }
  // Read no more than was measured, so a file growing meanwhile cannot pass the limit.
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) {
    why = "cannot be read";
    return std::nullopt;
  }
  return text;
}

std::optional<nlohmann::json> parse_json_input(std::string_view text, std::string& why) {
  const auto limit_depth = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const TooDeep&) {
    why = fmt::format("nested deeper than {} levels", kMaxJsonDepth);
  } catch (const nlohmann::json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ..." (or
    // out_of_range.406, "number overflow parsing '1e999'"); keep the readable part.
    const std::string what = e.what();
    const auto pos = what.find("] ");
    why = printable(pos == std::string::npos ? what : what.substr(pos + 2));
  }
  return std::nullopt;
}

std::string printable(std::string_view text, std::size_t max_chars) {
  std::string out;
  for (char ch : text) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace optadvisor
