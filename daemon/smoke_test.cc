#include <gtest/gtest.h>
#include <llhttp.h>
#include <event2/event.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>
#include <systemd/sd-daemon.h>
TEST(S, A) { llhttp_settings_t s; llhttp_settings_init(&s); auto* b = event_base_new(); event_base_free(b); spdlog::info("x {}", 1); auto t = toml::parse("a=1"); EXPECT_EQ(t["a"].value<int>(), 1); EXPECT_GE(sd_listen_fds(0), 0);}

