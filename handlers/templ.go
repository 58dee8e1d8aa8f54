package handlers

import "github.com/a-h/templ"

// templComponent shortens signatures that take a partial constructor.
type templComponent = templ.Component
