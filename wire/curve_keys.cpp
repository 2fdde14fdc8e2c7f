#include "wire/curve_keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace slicestream {
namespace {

constexpr std::size_t kZ85KeyLength = 40;

bool is_z85_key(const std::string& text) {
  if (text.size() != kZ85KeyLength) return false;
  unsigned char decoded[32];
  return zmq_z85_decode(decoded, text.c_str()) != nullptr;
}

std::string trimmed(const std::string& line) {
  const std::size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const std::size_t end = line.find_last_not_of(" \t\r");
  return line.substr(begin, end - begin + 1);
}

// The keys of a key file, one per non-comment line.
std::vector<std::string> read_keys(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CurveKeyError("cannot read the CURVE key file " + path);
  std::vector<std::string> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = trimmed(line);
    if (text.empty() || text[0] == '#') continue;
    if (!is_z85_key(text)) {
      throw CurveKeyError(
          path + ":" + std::to_string(number) +
          ": not a CURVE key (40 Z85 characters, e.g. from slicestream-ctl keygen)");
    }
    keys.push_back(text);
  }
  if (keys.empty()) throw CurveKeyError("the CURVE key file " + path + " holds no key");
  return keys;
}

std::string read_one_key(const std::string& path) {
  const std::vector<std::string> keys = read_keys(path);
  if (keys.size() != 1) {
    throw CurveKeyError("the CURVE key file " + path + " holds " + std::to_string(keys.size()) +
                        " keys, not one");
  }
  return keys.front();
}

// Creates `path` for writing with `mode`; fails when it exists.
void write_new_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw CurveKeyError("cannot create " + path + ": " + std::strerror(errno));
  const ssize_t written = ::write(fd, text.data(), text.size());
  const bool closed = ::close(fd) == 0;
  if (written != static_cast<ssize_t>(text.size()) || !closed) {
    throw CurveKeyError("cannot write " + path + ": " + std::strerror(errno));
  }
}

}  // namespace

bool curve_available() {
  return zmq_has("curve") != 0;
}

CurveKeyPair generate_curve_key_pair() {
  char public_key[kZ85KeyLength + 1];
  char secret_key[kZ85KeyLength + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    throw CurveKeyError(std::string("cannot generate a CURVE key pair: ") + zmq_strerror(errno));
  }
  return {public_key, secret_key};
}

CurveKeyPair read_curve_secret_key(const std::string& path) {
  CurveKeyPair keys;
  keys.secret_key = read_one_key(path);
  char public_key[kZ85KeyLength + 1];
  if (zmq_curve_public(public_key, keys.secret_key.c_str()) != 0) {
    throw CurveKeyError("cannot derive the public key of " + path + ": " + zmq_strerror(errno));
  }
  keys.public_key = public_key;
  return keys;
}

std::string read_curve_public_key(const std::string& path) {
  return read_one_key(path);
}

std::vector<std::string> read_curve_public_keys(const std::string& path) {
  return read_keys(path);
}

void write_curve_key_pair(const CurveKeyPair& keys, const std::string& prefix) {
  write_new_file(prefix + ".key",
                 "# slicestream CURVE secret key: keep it private (its public key is in " + prefix +
                     ".pub)\n" + keys.secret_key + "\n",
                 S_IRUSR | S_IWUSR);
  write_new_file(prefix + ".pub", "# slicestream CURVE public key\n" + keys.public_key + "\n",
                 S_IRUSR | S_IWUSR | S_IRGRP | S_IROTH);
}

}  // namespace slicestream
