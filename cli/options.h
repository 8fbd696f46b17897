// Options read strictly, for every command: integers are decimal digits only (no sign, no
// leading zero, no 0x; "010" and "0x10" are refused, never read as 8 or 16) within their
// stated range, and a file option given as '' is refused rather than taken as absent.
// A refused value is a CLI11 ValidationError: exit 2 with a one-line message naming the
// option and the value.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "os/atomic_file.h"

namespace dedupsim::cli {

// The value of text as a decimal integer in [min, max], or the reason it is not one.
struct DecimalResult {
  uint64_t value = 0;
  std::string error;  // empty: value holds
};
DecimalResult ParseDecimal(const std::string& text, uint64_t min, uint64_t max);

template <typename T>
CLI::Option* AddDecimal(CLI::App* sub, const std::string& name, T& target,
                        const std::string& description, std::type_identity_t<T> min,
                        std::type_identity_t<T> max) {
  static_assert(std::is_integral_v<T>);
  auto* option = sub->add_option_function<std::string>(
      name,
      [&target, name, min, max](const std::string& text) {
        DecimalResult r =
            ParseDecimal(text, static_cast<uint64_t>(min), static_cast<uint64_t>(max));
        if (!r.error.empty()) throw CLI::ValidationError(name, r.error);
        target = static_cast<T>(r.value);
      },
      description);
  // The range shows in --help and the generated reference as INT:MIN..MAX; the value is
  // checked by the function above (this validator only describes it).
  option->check(CLI::Validator([](const std::string&) { return std::string(); },
                               std::to_string(min) + ".." + std::to_string(max)));
  // A target outside the range is a sentinel ("not given"), not a default to show.
  auto within = [](T v, T lo, T hi) { return lo <= v && v <= hi; };
  if (within(target, min, max)) option->default_str(std::to_string(target));
  return option->type_name("INT");
}

// A share in [0, 1] written as plain decimal digits ("0", "1", "0.3", "1.0"): a sign, an
// exponent, a hex float ("0x1p-2"), "nan" or "inf" are refused, never read.
CLI::Option* AddShare(CLI::App* sub, const std::string& name, double& target,
                      const std::string& description);

// Describes an option's values as {a,b,...} in --help, the generated reference and the man
// page, which shell completion then offers, without checking them: the command checks the
// value itself and names the valid ones in its own message (so the exit status and the
// message stay the command's).
CLI::Validator ListedValues(const std::vector<std::string>& values);

// A file name option: '' is refused.
CLI::Option* AddFileOption(CLI::App* sub, const std::string& name, std::string& target,
                           const std::string& description);

// --backend, --dsn and --pg-schema, worded alike on every command that has them: "Database to
// <verb>: sqlite (<sqlite_is>, default) or postgres (...)<after>", and the schema dedupsim
// "creates, marks and <schema_use>". Returns the --dsn and --pg-schema options.
struct BackendOptions {
  CLI::Option* dsn;
  CLI::Option* schema;
};
BackendOptions AddBackendOptions(CLI::App* sub, std::string& backend, std::string& dsn,
                                 std::string& schema, const std::string& verb,
                                 const std::string& sqlite_is, const std::string& schema_use,
                                 const std::string& after = "");

// --broker and --broker-url, worded alike on run, soak and bench: "Broker <what>: ...".
// sim_is_default false (bench): without --broker there is no broker at all.
void AddBrokerOptions(CLI::App* sub, std::string& broker, std::string& url, const std::string& what,
                      bool sim_is_default = true);

// Whether an output file's name says SVG (--timeline writes SVG and nothing else).
bool EndsWithSvg(const std::string& path);

// Opens an output file (--timeline, --html: a temporary until committed) at path into
// *file, before anything runs; an empty path leaves it empty. On failure prints the one-line
// error and returns false: the command exits kExitCannotWrite.
bool OpenOutputFile(const std::string& path, std::optional<AtomicFile>* file);
// The pictures' files (--timeline, which must end in .svg, and --html; empty: not asked
// for), opened before anything runs so that a path that cannot be written costs no run and
// leaves nothing behind. 0, or the exit status after the one-line error (kExitUsage for a
// --timeline not ending in .svg, kExitCannotWrite).
int OpenPictureFiles(const std::string& timeline_path, const std::string& html_path,
                     std::optional<AtomicFile>* timeline, std::optional<AtomicFile>* html);
// Writes content() into *file when it is open. On failure prints the one-line error and
// returns false: the command exits kExitCannotWrite.
bool CommitOutputFile(std::optional<AtomicFile>* file, const std::function<std::string()>& content);

}  // namespace dedupsim::cli
