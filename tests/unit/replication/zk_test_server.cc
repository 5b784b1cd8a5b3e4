// tests/unit/replication/zk_test_server.cc: starts and controls a standalone
// ZooKeeper (org.apache.zookeeper.server.ZooKeeperServerMain) in its own
// process group. Readiness is the server's own answer to "ruok".
#include "tests/unit/replication/zk_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/skip.h"

namespace ciuickafka::replication::zk::testing {
namespace {

constexpr const char* kJar = "/usr/share/java/zookeeper.jar";
constexpr const char* kConfDir = "/etc/zookeeper/conf";

bool java_on_path() {
  const char* path = std::getenv("PATH");
  std::string p = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const std::string candidate = p.substr(start, end - start) + "/java";
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// One "ruok" exchange: true when the server answers "imok".
bool answers_ruok(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::write(fd, "ruok", 4) == 4) {
    pollfd p{fd, POLLIN, 0};
    char buf[8] = {};
    if (::poll(&p, 1, 2000) == 1 && ::read(fd, buf, 4) == 4) ok = std::string(buf, 4) == "imok";
  }
  ::close(fd);
  return ok;
}

}  // namespace

ZkTestServer::~ZkTestServer() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string ZkTestServer::unavailable_reason() {
  if (!java_on_path()) return "java is not installed (apt-get install default-jre-headless zookeeper)";
  if (::access(kJar, R_OK) != 0) return std::string(kJar) + " is missing (apt-get install zookeeper)";
  return "";
}

void ZkTestServer::skip_if_unavailable() {
  const std::string why = unavailable_reason();
  if (why.empty()) return;
  ciuickafka::test::skip_process(("no real ZooKeeper: " + why).c_str());
}

bool ZkTestServer::start(std::string* error) {
  char tmpl[] = "/tmp/ck-zk-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    *error = "mkdtemp failed";
    return false;
  }
  dir_ = tmpl;
  port_ = free_port();
  std::ofstream cfg(dir_ + "/zoo.cfg");
  cfg << "tickTime=200\ndataDir=" << dir_ << "/data\nclientPort=" << port_
      << "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n"
      << "minSessionTimeout=400\nmaxSessionTimeout=60000\nmaxClientCnxns=0\n";
  cfg.close();
  if (!cfg) {
    *error = "cannot write " + dir_ + "/zoo.cfg";
    return false;
  }
  return launch(error);
}

bool ZkTestServer::restart(std::string* error) {
  stop();
  return launch(error);
}

bool ZkTestServer::launch(std::string* error) {
  const std::string cp = std::string(kConfDir) + ":" + kJar;
  const std::string cfg = dir_ + "/zoo.cfg";
  const std::string log = dir_ + "/zookeeper.log";
  const pid_t pid = ::fork();
  if (pid < 0) {
    *error = "fork failed";
    return false;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const char* argv[] = {"java",      "-Xmx128m",   "-XX:TieredStopAtLevel=1",
                          "-Dzookeeper.admin.enableServer=false",
                          "-cp",       cp.c_str(), "org.apache.zookeeper.server.ZooKeeperServerMain",
                          cfg.c_str(), nullptr};
    ::execvp("java", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *error = "ZooKeeper exited during start-up; see " + log;
      return false;
    }
    if (answers_ruok(port_)) return true;
    // Not listening yet: ask again shortly (the answer is the event).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  *error = "ZooKeeper on 127.0.0.1:" + std::to_string(port_) + " did not answer ruok within 40 s; see " + log;
  kill9();
  return false;
}

void ZkTestServer::reap(int wait_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void ZkTestServer::stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGCONT);
  ::kill(-pid_, SIGTERM);
  reap(5000);
  if (pid_ > 0) kill9();
}

void ZkTestServer::kill9() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ZkTestServer::pause() {
  if (pid_ > 0) ::kill(-pid_, SIGSTOP);
}

void ZkTestServer::resume() {
  if (pid_ > 0) ::kill(-pid_, SIGCONT);
}

}  // namespace ciuickafka::replication::zk::testing
