package handlers

import (
	"fmt"
	"runtime/debug"

	"github.com/labstack/echo/v4"

	"patchbay"
)

// recoverPanics turns a panic in a handler into an internal error, so the
// central error handler answers and the process keeps serving. The stack is
// logged through the redacting logger; the panic value is never shown.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.Log.Error("panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()), "request_id", requestIDFrom(c))
				err = &patchbay.Error{Code: patchbay.EINTERNAL, Message: "Internal error.", Err: fmt.Errorf("panic: %v", r)}
			}
		}()
		return next(c)
	}
}
