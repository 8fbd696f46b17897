#include "sqlite/journal_files.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <vector>

namespace dedupsim {

namespace {

uint32_t Big32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::vector<unsigned char> ReadBytes(const std::string& path, bool& exists) {
  std::ifstream in(path, std::ios::binary);
  exists = static_cast<bool>(in);
  if (!exists) return {};
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

// The WAL checksum: pairs of 32-bit words, read big-endian or little-endian as the
// header's magic says, folded into (s0, s1).
struct Checksum {
  bool big_endian = true;
  uint32_t s0 = 0;
  uint32_t s1 = 0;
  void Add(const unsigned char* p, size_t n) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint32_t x0 = Word(p + i);
      uint32_t x1 = Word(p + i + 4);
      s0 += x0 + s1;
      s1 += x1 + s0;
    }
  }
  uint32_t Word(const unsigned char* p) const {
    if (big_endian) return Big32(p);
    return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[0]};
  }
};

constexpr size_t kWalHeader = 32;
constexpr size_t kFrameHeader = 24;

}  // namespace

WalFile ReadWal(const std::string& path) {
  WalFile wal;
  std::vector<unsigned char> b = ReadBytes(path, wal.exists);
  wal.bytes = static_cast<int64_t>(b.size());
  if (b.size() < kWalHeader) return wal;
  uint32_t magic = Big32(&b[0]);
  if ((magic & 0xFFFFFFFEu) != 0x377f0682u || Big32(&b[4]) != 3007000u) return wal;
  Checksum sum;
  sum.big_endian = (magic & 1u) != 0;
  sum.Add(b.data(), 24);
  if (sum.s0 != Big32(&b[24]) || sum.s1 != Big32(&b[28])) return wal;
  wal.header_valid = true;
  wal.page_size = Big32(&b[8]);
  if (wal.page_size == 1) wal.page_size = 65536;
  wal.salt1 = Big32(&b[16]);
  wal.salt2 = Big32(&b[20]);
  if (wal.page_size < 512) return wal;
  const size_t frame = kFrameHeader + wal.page_size;
  int64_t commits = 0;
  for (size_t off = kWalHeader; off + frame <= b.size(); off += frame) {
    const unsigned char* h = &b[off];
    if (Big32(h + 8) != wal.salt1 || Big32(h + 12) != wal.salt2) break;
    Checksum next = sum;
    next.Add(h, 8);
    next.Add(h + kFrameHeader, wal.page_size);
    if (next.s0 != Big32(h + 16) || next.s1 != Big32(h + 20)) break;
    sum = next;
    wal.valid_frames++;
    if (Big32(h + 4) != 0) {
      commits++;
      wal.committed_frames = wal.valid_frames;
      wal.commits = commits;
    }
  }
  wal.tail_frames = wal.valid_frames - wal.committed_frames;
  return wal;
}

int64_t CommitsSince(const WalFile& now, const WalFile& before) {
  if (!now.header_valid) return 0;
  const bool same_log =
      before.header_valid && before.salt1 == now.salt1 && before.salt2 == now.salt2;
  return same_log ? now.commits - before.commits : now.commits;
}

int64_t TailSince(const WalFile& now, const WalFile& before) {
  if (!now.header_valid) return 0;
  const bool same_log =
      before.header_valid && before.salt1 == now.salt1 && before.salt2 == now.salt2;
  int64_t first_new = same_log ? before.valid_frames : 0;
  int64_t tail_start = std::max(now.committed_frames, first_new);
  return std::max<int64_t>(0, now.valid_frames - tail_start);
}

JournalFile ReadJournal(const std::string& path) {
  static constexpr std::array<unsigned char, 8> kMagic = {0xd9, 0xd5, 0x05, 0xf9,
                                                          0x20, 0xa1, 0x63, 0xd7};
  JournalFile journal;
  std::vector<unsigned char> b = ReadBytes(path, journal.exists);
  journal.bytes = static_cast<int64_t>(b.size());
  if (!b.empty()) journal.hot = b[0] != 0;
  if (b.size() < 28) return journal;
  journal.header_valid = std::memcmp(b.data(), kMagic.data(), kMagic.size()) == 0;
  // Header: magic, record count, nonce, initial page count, sector size, page size; it
  // fills one sector.
  uint32_t sector = Big32(&b[20]);
  uint32_t page_size = Big32(&b[24]);
  if (sector < 28 || page_size < 512) return journal;
  if (b.size() > sector)
    journal.page_records = static_cast<int64_t>((b.size() - sector) / (page_size + 8));
  return journal;
}

}  // namespace dedupsim
