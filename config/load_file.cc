// Reading a config file: the bytes, then LoadConfigString. An unreadable
// file is an error naming the file (no line: there is no text to point at).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "config/loader.h"

namespace gearbox {

ConfigResult LoadConfigFile(const std::string& path,
                            const ConfigVocabulary& vocabulary) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ConfigError{path, 0, 0, std::strerror(errno)};
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      close(fd);
      return ConfigError{path, 0, 0, std::strerror(saved)};
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return LoadConfigString(text, path, vocabulary);
}

}  // namespace gearbox
