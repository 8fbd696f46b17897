#include "options.h"

#include <fmt/format.h>

#include <cstdlib>

#include "exit_status.h"

namespace dedupsim::cli {

DecimalResult ParseDecimal(const std::string& text, uint64_t min, uint64_t max) {
  DecimalResult r;
  const std::string range = fmt::format("a decimal integer from {} to {}", min, max);
  if (text.empty()) {
    r.error = fmt::format("empty value; {} is needed", range);
    return r;
  }
  if (text.size() > 1 && text.front() == '-' &&
      text.find_first_not_of("0123456789", 1) == std::string::npos) {
    r.error = fmt::format("{}: negative; {} is needed", text, range);
    return r;
  }
  if (text.find_first_not_of("0123456789") != std::string::npos) {
    r.error = fmt::format("{}: not {} (digits only: no sign, no 0x)", text, range);
    return r;
  }
  if (text.size() > 1 && text.front() == '0') {
    r.error = fmt::format("{}: leading zero; {} is needed (written without one)", text, range);
    return r;
  }
  uint64_t value = 0;
  for (char c : text) {
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      r.error = fmt::format("{}: out of range; {} is needed", text, range);
      return r;
    }
    value = value * 10 + digit;
  }
  if (value < min || value > max) {
    r.error = fmt::format("{}: out of range; {} is needed", text, range);
    return r;
  }
  r.value = value;
  return r;
}

CLI::Option* AddShare(CLI::App* sub, const std::string& name, double& target,
                      const std::string& description) {
  auto* option = sub->add_option_function<std::string>(
      name,
      [&target, name](const std::string& text) {
        // 0 or 1, then optionally a point and digits: the only spellings read.
        const bool digits = text.size() >= 1 && (text[0] == '0' || text[0] == '1') &&
                            (text.size() == 1 ||
                             (text.size() > 2 && text[1] == '.' &&
                              text.find_first_not_of("0123456789", 2) == std::string::npos));
        if (!digits) {
          throw CLI::ValidationError(
              name, "'" + text + "' is not a share in [0, 1] written in decimal (like 0.3)");
        }
        const double value = std::strtod(text.c_str(), nullptr);
        if (value > 1.0) throw CLI::ValidationError(name, "'" + text + "' is more than 1");
        target = value;
      },
      description);
  // Shown as before: the type and the range.
  option->type_name("FLOAT:FLOAT in [0 - 1]");
  option->default_str(fmt::format("{}", target));
  return option;
}

CLI::Validator ListedValues(const std::vector<std::string>& values) {
  std::string listed;
  for (const std::string& v : values) listed += (listed.empty() ? "" : ",") + v;
  return CLI::Validator([](const std::string&) { return std::string(); }, "{" + listed + "}");
}

CLI::Option* AddFileOption(CLI::App* sub, const std::string& name, std::string& target,
                           const std::string& description) {
  return sub
      ->add_option_function<std::string>(
          name,
          [&target, name](const std::string& text) {
            if (text.empty()) throw CLI::ValidationError(name, "empty file name");
            target = text;
          },
          description)
      ->type_name("FILE");
}

bool EndsWithSvg(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
}

BackendOptions AddBackendOptions(CLI::App* sub, std::string& backend, std::string& dsn,
                                 std::string& schema, const std::string& verb,
                                 const std::string& sqlite_is, const std::string& schema_use,
                                 const std::string& after) {
  sub->add_option("--backend", backend,
                  fmt::format("Database to {}: sqlite ({}, default) or postgres (a private "
                              "throwaway server started for this command, or the one --dsn "
                              "names){}",
                              verb, sqlite_is, after))
      ->check(CLI::IsMember({"sqlite", "postgres"}));
  BackendOptions made;
  made.dsn = sub->add_option(
                     "--dsn", dsn,
                     "postgres: a libpq connection string (\"host=... dbname=...\") of a server "
                     "you run; dedupsim works only in the schema it creates there (--pg-schema)")
                 ->check(CLI::Validator(
                     [](const std::string& text) -> std::string {
                       return text.empty() ? "an empty connection string (leave --dsn out for "
                                             "a throwaway server)"
                                           : "";
                     },
                     ""));
  made.schema = sub->add_option(
      "--pg-schema", schema,
      fmt::format("postgres: the schema dedupsim creates, marks and {} (default dedupsim); one "
                  "it did not create is refused (exit 3)",
                  schema_use));
  // PostgreSQL cuts a longer name to 63 bytes, so two names could open one schema.
  made.schema->check(CLI::Validator(
      [](const std::string& text) -> std::string {
        if (text.empty()) return "an empty schema name";
        if (text.size() > 63) {
          return "a schema name is at most 63 bytes (PostgreSQL cuts longer ones)";
        }
        return "";
      },
      ""));
  return made;
}

void AddBrokerOptions(CLI::App* sub, std::string& broker, std::string& url,
                      const std::string& what, bool sim_is_default) {
  sub->add_option("--broker", broker,
                  fmt::format("Broker {}: sim (the simulation{}), nats (NATS JetStream) or "
                              "rabbitmq (RabbitMQ): a private server started for this command, "
                              "or the one --broker-url names{}",
                              what, sim_is_default ? ", default" : "",
                              sim_is_default ? "" : " (default: none)"))
      ->check(CLI::IsMember({"sim", "nats", "rabbitmq"}));
  sub->add_option("--broker-url", url,
                  "nats or rabbitmq: a server you run (nats://host:port, "
                  "amqp://user:password@host:port/vhost); dedupsim uses only the streams and "
                  "queues it creates and marks there, and refuses others of their names (exit 3)")
      ->type_name("URL");
}

int OpenPictureFiles(const std::string& timeline_path, const std::string& html_path,
                     std::optional<AtomicFile>* timeline, std::optional<AtomicFile>* html) {
  if (!timeline_path.empty() && !EndsWithSvg(timeline_path)) {
    fmt::print(stderr, "dedupsim: --timeline {}: the file must end in .svg (it is SVG)\n",
               timeline_path);
    return kExitUsage;
  }
  if (!OpenOutputFile(timeline_path, timeline)) return kExitCannotWrite;
  if (!OpenOutputFile(html_path, html)) return kExitCannotWrite;
  return 0;
}

bool OpenOutputFile(const std::string& path, std::optional<AtomicFile>* file) {
  if (path.empty()) return true;
  try {
    file->emplace(path);
  } catch (const OutputFileError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return false;
  }
  return true;
}

bool CommitOutputFile(std::optional<AtomicFile>* file,
                      const std::function<std::string()>& content) {
  if (!*file) return true;
  try {
    (*file)->Commit(content());
  } catch (const OutputFileError& e) {
    fmt::print(stderr, "dedupsim: {}\n", e.what());
    return false;
  }
  return true;
}

}  // namespace dedupsim::cli
