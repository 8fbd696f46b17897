#include "postgres/cluster_template.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "os/run_files.h"
#include "os/unique_fd.h"

namespace dedupsim {

namespace {

// Bumped when what a template holds, or how it is made, changes.
constexpr const char* kStampFormat = "dedupsim postgres template 1";

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// A folder of ours: a real folder (not a link), owned by us, not writable by others.
bool OwnFolder(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

bool RegularFile(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Creates path's missing folders (0700), like mkdir -p.
bool MakeFolders(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    std::string part = path.substr(0, at);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string FileIdentity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return fmt::format("{}:{}:{}:{}.{:09}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

std::string ReadSmallFile(const std::string& path) {
  if (!RegularFile(path)) return {};
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Copies [from, to) of in to the same offsets of out: in the kernel where it can.
bool CopyRange(int in, int out, off_t from, off_t to) {
  off_t in_at = from;
  off_t out_at = from;
  while (in_at < to) {
    ssize_t n = ::copy_file_range(in, &in_at, out, &out_at, static_cast<size_t>(to - in_at), 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return false;  // the file shrank under us
    break;                     // not supported here: copy by hand
  }
  std::array<char, 1 << 16> buffer{};
  while (in_at < to) {
    size_t want = std::min(buffer.size(), static_cast<size_t>(to - in_at));
    ssize_t n = ::pread(in, buffer.data(), want, in_at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::pwrite(out, buffer.data() + done, static_cast<size_t>(n - done), out_at);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += w;
      out_at += w;
    }
    in_at += n;
  }
  return true;
}

// Reads in whole and writes it to out, leaving a hole for each block of zeros.
bool CopyZerosAsHoles(int in, int out) {
  std::array<char, 1 << 16> buffer{};
  for (;;) {
    ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    const auto size = static_cast<size_t>(n);
    bool zeros = buffer[0] == 0 && std::memcmp(buffer.data(), buffer.data() + 1, size - 1) == 0;
    if (zeros) {
      if (::lseek(out, n, SEEK_CUR) < 0) return false;
    } else if (!WriteAll(out, buffer.data(), size)) {
      return false;
    }
  }
}

// Copies in's data extents to out (holes stay holes).
bool CopyKeepingHoles(int in, int out, off_t size) {
  for (off_t at = 0; at < size;) {
    off_t data = ::lseek(in, at, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0) return CopyRange(in, out, at, size);  // no SEEK_DATA here: copy it all
    off_t hole = ::lseek(in, data, SEEK_HOLE);
    if (hole < 0) hole = size;
    if (!CopyRange(in, out, data, hole)) return false;
    at = hole;
  }
  return true;
}

bool CopyFileAt(int src_dir, int dst_dir, const char* name, const FileOwner& owner,
                bool zeros_to_holes) {
  UniqueFd in(::openat(src_dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (in.get() < 0) return false;
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  UniqueFd out(::openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                  st.st_mode & 0700));
  if (out.get() < 0) return false;
  if (owner.change && ::fchown(out.get(), owner.uid, owner.gid) != 0) return false;
  if (st.st_size == 0) return true;
  bool copied = zeros_to_holes ? CopyZerosAsHoles(in.get(), out.get())
                               : CopyKeepingHoles(in.get(), out.get(), st.st_size);
  return copied && ::ftruncate(out.get(), st.st_size) == 0;
}

// Copies the folder src_fd into the (new, empty) folder dst_fd.
bool CopyFolder(int src_fd, int dst_fd, const FileOwner& owner, bool zeros_to_holes, int depth) {
  if (depth > 16) return false;
  int listing = ::dup(src_fd);
  if (listing < 0) return false;
  DIR* dir = ::fdopendir(listing);
  if (dir == nullptr) {
    ::close(listing);
    return false;
  }
  bool ok = true;
  while (ok) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      ok = errno == 0;
      break;
    }
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    struct stat st {};
    if (::fstatat(src_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      ok = false;
    } else if (S_ISREG(st.st_mode)) {
      ok = CopyFileAt(src_fd, dst_fd, name, owner, zeros_to_holes);
    } else if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(dst_fd, name, 0700) != 0) {
        ok = false;
        break;
      }
      UniqueFd from(::openat(src_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      UniqueFd to(::openat(dst_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      ok = from.get() >= 0 && to.get() >= 0 &&
           (!owner.change || ::fchown(to.get(), owner.uid, owner.gid) == 0) &&
           CopyFolder(from.get(), to.get(), owner, zeros_to_holes, depth + 1);
    } else {
      ok = false;  // a link, a socket, ...: not what initdb makes
    }
  }
  ::closedir(dir);
  return ok;
}

int RemoveTreeEntry(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);
  return 0;
}

// A new name beside path: path.TAG-XXXXXX, made as an empty folder.
std::string FolderBeside(const std::string& path, const char* tag) {
  std::string pattern = path + "." + tag + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return {};
  return pattern;
}

// Leftovers of commands killed while they replaced a template: an old one renamed aside
// (never used again), or a new one half-made more than an hour ago.
void SweepLeftovers(const std::string& cache) {
  DIR* dir = ::opendir(cache.c_str());
  if (dir == nullptr) return;
  const auto now = std::chrono::system_clock::now();
  std::vector<std::string> gone;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    bool old = name.rfind("postgres-template.old-", 0) == 0;
    bool half = name.rfind("postgres-template.new-", 0) == 0;
    if (!old && !half) continue;
    struct stat st {};
    std::string path = cache + "/" + name;
    if (::lstat(path.c_str(), &st) != 0) continue;
    auto age = now - std::chrono::system_clock::from_time_t(st.st_mtime);
    if (old || age > std::chrono::hours(1)) gone.push_back(path);
  }
  ::closedir(dir);
  for (const std::string& path : gone) RemoveTree(path);
}

}  // namespace

void RemoveTree(const std::string& path) noexcept {
  if (!path.empty()) ::nftw(path.c_str(), &RemoveTreeEntry, 16, FTW_DEPTH | FTW_PHYS);
}

bool CopyTree(const std::string& src, const std::string& dst, const FileOwner& owner,
              bool zeros_to_holes) {
  UniqueFd from(::open(src.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (from.get() < 0) return false;
  if (::mkdir(dst.c_str(), 0700) != 0) return false;
  UniqueFd to(::open(dst.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  bool ok = to.get() >= 0 && (!owner.change || ::fchown(to.get(), owner.uid, owner.gid) == 0) &&
            CopyFolder(from.get(), to.get(), owner, zeros_to_holes, 0);
  if (!ok) RemoveTree(dst);
  return ok;
}

std::optional<ClusterTemplate> ClusterTemplate::For(const std::string& bin,
                                                    const std::vector<std::string>& initdb_args) {
  std::string cache = Env("DEDUPSIM_CACHE_DIR");
  if (cache.empty()) {
    std::string xdg = Env("XDG_CACHE_HOME");
    std::string home = Env("HOME");
    if (!xdg.empty() && xdg.front() == '/') {
      cache = xdg + "/dedupsim";
    } else if (!home.empty() && home.front() == '/') {
      cache = home + "/.cache/dedupsim";
    } else {
      return std::nullopt;
    }
  }
  if (cache.front() != '/') return std::nullopt;
  if (!MakeFolders(cache) || !OwnFolder(cache)) return std::nullopt;
  std::string stamp = fmt::format("{}\nbin {}\ninitdb {}\npostgres {}\nargs", kStampFormat, bin,
                                  FileIdentity(bin + "/initdb"), FileIdentity(bin + "/postgres"));
  for (const std::string& arg : initdb_args) stamp += " " + arg;
  stamp += "\n";
  return ClusterTemplate(cache, stamp);
}

bool ClusterTemplate::Valid() const {
  return OwnFolder(folder_) && ReadSmallFile(folder_ + "/stamp") == stamp_ &&
         OwnFolder(folder_ + "/data") && RegularFile(folder_ + "/data/PG_VERSION") &&
         RegularFile(folder_ + "/data/global/pg_control");
}

bool ClusterTemplate::CopyTo(const std::string& data, const FileOwner& owner) const {
  return Valid() && CopyTree(folder_ + "/data", data, owner, false);
}

void ClusterTemplate::Keep(const std::string& data) const {
  SweepLeftovers(cache_);
  const std::string fresh = FolderBeside(folder_, "new");
  if (fresh.empty()) return;
  run_files::RegisterCleanup(fresh, [fresh] { RemoveTree(fresh); });
  bool made = CopyTree(data, fresh + "/data", FileOwner{}, true);
  if (made) {
    UniqueFd stamp(::open((fresh + "/stamp").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    // The stamp last, and only once the data is on disk: a template with a stamp is whole.
    made = stamp.get() >= 0 && ::syncfs(stamp.get()) == 0 &&
           WriteAll(stamp.get(), stamp_.data(), stamp_.size()) && ::fsync(stamp.get()) == 0;
  }
  if (made && ::rename(fresh.c_str(), folder_.c_str()) != 0) {
    // A template is there already: another command's, just made, or a stale or foreign one.
    if (Valid()) {
      made = false;
    } else {
      const std::string aside = FolderBeside(folder_, "old");
      made = !aside.empty() && ::rename(folder_.c_str(), aside.c_str()) == 0 &&
             ::rename(fresh.c_str(), folder_.c_str()) == 0;
      RemoveTree(aside);
    }
  }
  run_files::ForgetCleanup(fresh);
  if (!made) RemoveTree(fresh);
}

void ClusterTemplate::Discard() const {
  const std::string aside = FolderBeside(folder_, "old");
  if (!aside.empty() && ::rename(folder_.c_str(), aside.c_str()) == 0) {
    RemoveTree(aside);
  } else if (!aside.empty()) {
    ::rmdir(aside.c_str());
  }
}

}  // namespace dedupsim
