#include "cli/config_file_check.hpp"

#include <memory>
#include <string>
#include <vector>

#include "cli/nearest_name.hpp"

namespace slicestream::cli {

namespace {

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string nearest = nearest_name(name, candidates);
  return nearest.empty() ? std::string() : " (did you mean '" + nearest + "'?)";
}

// The keys CLI11 accepts in `app`'s section: its options' long names.
std::vector<std::string> keys_of(const CLI::App& app) {
  std::vector<std::string> keys;
  for (const CLI::Option* option : app.get_options()) {
    if (!option->get_configurable()) continue;
    for (const std::string& name : option->get_lnames())
      keys.push_back(name);
  }
  return keys;
}

bool has_key(const CLI::App& app, const std::string& key) {
  // CLI11's own lookup (App::_parse_single_config): "--key", "-k", then a positional's name.
  if (app.get_option_no_throw("--" + key) != nullptr) return true;
  if (key.size() == 1 && app.get_option_no_throw("-" + key) != nullptr) return true;
  return app.get_option_no_throw(key) != nullptr;
}

const CLI::App* subcommand_named(const CLI::App& app, const std::string& name) {
  const std::vector<const CLI::App*> found =
      app.get_subcommands([&name](const CLI::App* sub) { return sub->check_name(name); });
  return found.empty() ? nullptr : found.front();
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

std::string file_of(const CLI::App& app) {
  const CLI::Option* config = app.get_config_ptr();
  if (config == nullptr || config->results().empty()) return "the config file";
  return "config file " + config->results().back();
}

class CheckedConfig : public CLI::ConfigTOML {
 public:
  explicit CheckedConfig(const CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> read = CLI::ConfigTOML::from_config(input);
    for (const CLI::ConfigItem& item : read)
      check(item);
    return read;
  }

 private:
  void check(const CLI::ConfigItem& item) const {
    const CLI::App* section = &app_;
    for (const std::string& parent : item.parents) {
      const CLI::App* sub = subcommand_named(*section, parent);
      if (sub == nullptr) {
        const std::vector<std::string> names = subcommand_names(*section);
        throw CLI::ConfigError(file_of(app_) + ": unknown section [" + parent + "]" +
                               (names.empty() ? std::string("; write every key at the top level")
                                              : did_you_mean(parent, names)));
      }
      section = sub;
    }
    // "++" and "--" mark where a section opens and closes.
    if (item.name == "++" || item.name == "--" || has_key(*section, item.name)) return;
    std::string where;
    for (const std::string& parent : item.parents)
      where += (where.empty() ? " in section [" : ".") + parent;
    if (!where.empty()) where += "]";
    throw CLI::ConfigError(file_of(app_) + ": unknown key '" + item.name + "'" + where +
                           did_you_mean(item.name, keys_of(*section)));
  }

  const CLI::App& app_;
};

}  // namespace

void require_known_config_keys(CLI::App& app) {
  app.config_formatter(std::make_shared<CheckedConfig>(app));
}

}  // namespace slicestream::cli
