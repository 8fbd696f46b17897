// The throwaway cluster's template: a data folder made by initdb once and kept in the
// user's cache folder, so that each later command copies it (a second or less) instead of
// running initdb (one to three seconds). The copy is a new, private cluster: the template
// itself is never started nor written by a server.
//
// Where: $DEDUPSIM_CACHE_DIR when set, else $XDG_CACHE_HOME/dedupsim, else
// $HOME/.cache/dedupsim; inside it the folder `postgres-template` holds `stamp` and
// `data`. The stamp names what made the template: the server programs' folder and the
// identity of its initdb and postgres files (device, inode, size, modification time), and
// initdb's arguments. A template whose stamp differs (PostgreSQL was upgraded, another
// installation or other arguments: stale), or that is not a plain folder of ours with a
// stamp and a data folder (foreign, or left half-made), is not used; the next initdb
// replaces it. The cache folder itself must be a real folder owned by the user and not
// writable by others, or no cache is used at all (every command then runs initdb).
//
// Nothing here throws: a cache that cannot be read or written only costs the initdb it
// would have saved. Two commands may fill the cache at once: each builds its copy under a
// name of its own and renames it into place; the loser's copy is removed.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace dedupsim {

// Who the copied files belong to: unchanged (the caller's), or a user the server runs as.
struct FileOwner {
  bool change = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

class ClusterTemplate {
 public:
  // The cache for the server programs in bin and initdb's arguments (without -D), or
  // nullopt when there is no usable cache folder (no HOME, a foreign cache folder).
  static std::optional<ClusterTemplate> For(const std::string& bin,
                                            const std::vector<std::string>& initdb_args);

  // Copies the template's data folder to data (which must not exist), its files given to
  // owner. False, with nothing left at data, when the cache holds no valid template for
  // this stamp or the copy failed: the caller then runs initdb.
  bool CopyTo(const std::string& data, const FileOwner& owner) const;

  // Keeps data (a cluster the caller made with initdb and shut down cleanly) as the template,
  // replacing a stale or foreign one. Best effort: a failure leaves the cache without one.
  void Keep(const std::string& data) const;

  // Removes the template (a copy of it did not start: it is rebuilt by the next initdb).
  void Discard() const;

  const std::string& folder() const { return folder_; }
  const std::string& stamp() const { return stamp_; }

 private:
  ClusterTemplate(std::string cache, std::string stamp)
      : cache_(std::move(cache)), folder_(cache_ + "/postgres-template"), stamp_(std::move(stamp)) {}
  bool Valid() const;

  std::string cache_;   // <cache folder>/dedupsim (or $DEDUPSIM_CACHE_DIR)
  std::string folder_;  // cache_/postgres-template
  std::string stamp_;
};

// Copies the folder tree src to dst (created with mode 0700), regular files and folders
// only, each file with its mode and, when owner.change, given to owner. Holes are kept:
// with zeros_to_holes, blocks of zeros in src become holes too (a WAL segment is mostly
// zeros). False, with dst removed again, on any error or on anything but files and folders.
bool CopyTree(const std::string& src, const std::string& dst, const FileOwner& owner,
              bool zeros_to_holes);

// Removes path and everything under it, without following symbolic links.
void RemoveTree(const std::string& path) noexcept;

}  // namespace dedupsim
