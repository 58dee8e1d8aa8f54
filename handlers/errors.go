package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"patchbay"
	"patchbay/views"
)

// statusOf maps error codes to HTTP statuses.
var statusOf = map[string]int{
	patchbay.EINVALID:      http.StatusBadRequest,
	patchbay.EUNAUTHORIZED: http.StatusUnauthorized,
	patchbay.EFORBIDDEN:    http.StatusForbidden,
	patchbay.ENOTFOUND:     http.StatusNotFound,
	patchbay.ECONFLICT:     http.StatusConflict,
	patchbay.ERATELIMIT:    http.StatusTooManyRequests,
	patchbay.EINTERNAL:     http.StatusInternalServerError,
}

var titleOf = map[int]string{
	http.StatusBadRequest:          "That did not work",
	http.StatusUnauthorized:        "Please sign in",
	http.StatusForbidden:           "Not allowed",
	http.StatusNotFound:            "Not found",
	http.StatusMethodNotAllowed:    "Not allowed",
	http.StatusConflict:            "Already exists",
	http.StatusTooManyRequests:     "Slow down",
	http.StatusInternalServerError: "Something went wrong",
}

// handleError is the one place errors become responses: a full page, an
// HTMX fragment or JSON, by request. It never writes twice and logs only
// internal errors (redacted by the logger).
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		s.Log.Error("error after response was sent", "err", err, "request_id", requestIDFrom(c))
		return
	}
	status, msg := s.classify(err)
	if status >= 500 {
		s.Log.Error("internal error", "err", err, "path", c.Request().URL.Path, "request_id", requestIDFrom(c))
		msg = "Something went wrong on our side. The request id is " + requestIDFrom(c) + "."
	}
	props := views.ErrorProps{Shell: s.shell(c, titleOf[status], ""), Status: status, Title: titleOf[status], Message: msg}
	var rerr error
	switch {
	case wantsJSON(c):
		rerr = c.JSON(status, apiError{Error: apiErrorBody{Code: codeOfStatus(status), Message: msg}})
	case isHTMX(c):
		if status == http.StatusUnauthorized {
			c.Response().Header().Set("HX-Redirect", s.signInURL(c))
		}
		// Errors go to the page's alert region, whatever the target was.
		c.Response().Header().Set("HX-Retarget", "#htmx-alerts")
		c.Response().Header().Set("HX-Reswap", "innerHTML")
		rerr = render(c, status, views.ErrorFragment(props))
	case status == http.StatusUnauthorized && c.Request().Method == http.MethodGet:
		rerr = c.Redirect(http.StatusSeeOther, s.signInURL(c))
	default:
		rerr = render(c, status, views.ErrorPage(props))
	}
	if rerr != nil {
		s.Log.Error("rendering error response", "err", rerr, "request_id", requestIDFrom(c))
	}
}

func (s *Server) classify(err error) (int, string) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return he.Code, "There is nothing at this address."
		case http.StatusMethodNotAllowed:
			return he.Code, "That method is not allowed here."
		case http.StatusRequestEntityTooLarge:
			return he.Code, "The request is too large."
		}
		if he.Code < 500 {
			return he.Code, http.StatusText(he.Code)
		}
		return http.StatusInternalServerError, ""
	}
	return statusOf[patchbay.ErrorCode(err)], patchbay.ErrorMessage(err)
}

// signInURL returns the sign-in page that brings the caller back here.
func (s *Server) signInURL(c echo.Context) string {
	next := c.Request().URL.RequestURI()
	if isHTMX(c) {
		if cur := c.Request().Header.Get("HX-Current-URL"); cur != "" {
			if u, err := url.Parse(cur); err == nil {
				next = u.RequestURI()
			}
		}
	}
	if next == "/" || c.Request().Method != http.MethodGet && !isHTMX(c) {
		return "/signin"
	}
	return "/signin?next=" + url.QueryEscape(next)
}

type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func codeOfStatus(status int) string {
	for code, st := range statusOf {
		if st == status {
			return code
		}
	}
	return strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
}
