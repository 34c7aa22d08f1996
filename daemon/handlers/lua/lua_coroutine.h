// One coroutine gearbox runs on a worker's runtime, as an Exchange: each
// wait a gearbox.* call asks for is returned as the Step, and the Wake that
// ends it resumes the coroutine. A request's coroutine (LuaRequestExchange)
// and a script's init (RunInit) are both this.
#pragma once

#include <string>

#include "daemon/handler.h"
#include "daemon/handlers/lua/lua_host.h"

namespace gearbox::lua {

class Runtime;

class Coroutine : public Exchange {
 public:
  // A coroutine that will call the function at registry ref `fn`; the
  // caller pushes its arguments onto co() before the first Resume and says
  // how many (set_nargs). `label` (the script's path, for logs) must
  // outlive the coroutine.
  Coroutine(Runtime* runtime, int fn, const std::string& label);
  // Ends the coroutine however far it got: its cosockets close, its thread
  // is released, the runtime learns it ended.
  ~Coroutine() override;

  lua_State* co() const { return ctx_.co; }
  void set_nargs(int n) { nargs_ = n; }
  // Runs the function now, up to its first wait or its end, while what its
  // arguments view is still valid (a request, during Handler::Start); the
  // first Resume() then only answers with what it did. True when it waits.
  bool RunFirst();
  Step Resume(const Wake& wake, Response& response) final;

 protected:
  // The function returned `n` values on co()'s stack: fill the response.
  // Returns "" or what is wrong with them (then 500).
  virtual std::string Answer(int n, Response& response) = 0;
  // A runtime error (message with script:line, and its traceback).
  virtual void Failed(const std::string& message, const std::string& traceback,
                      bool memory, Response& response) = 0;
  const std::string& label() const { return label_; }
  WaitCtx& ctx() { return ctx_; }

 private:
  int PushWakeResults(const Wake& wake);
  // Resumes the coroutine with `nargs` values on its stack: lua_resume's
  // status.
  int Enter(int nargs);
  // What the coroutine's stop (Enter's status) means for the exchange.
  Step Settle(int status, Response& response);
  Step Error(int status, Response& response);

  Runtime* const runtime_;
  const std::string& label_;
  WaitCtx ctx_;
  int ref_ = LUA_NOREF;  // keeps the thread alive while it is suspended
  int nargs_ = 0;
  bool memory_error_ = false;
  bool finished_ = false;  // returned: the thread may run another function
  int first_status_ = -1;  // RunFirst's, until the first Resume settles it
};

}  // namespace gearbox::lua
