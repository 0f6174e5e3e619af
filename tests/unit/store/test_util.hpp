#pragma once
// Helpers shared by the store tests: a temporary directory removed at the end of each test.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "store/sqlite/sqlite_store.hpp"

namespace tollgate::store::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tg_store_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::unique_ptr<Store> open_or_die(const std::string& url, const sqlite::SqliteOptions& o = {}) {
  auto s = sqlite::open_sqlite_store(url, o);
  if (!s) {
    ADD_FAILURE() << "open " << url << ": " << s.error().message;
    return nullptr;
  }
  return std::move(*s);
}

}  // namespace tollgate::store::testing
