package layers

// StatuszError is zpagesError, for the tests outside the package.
func (c *Component[T]) StatuszError(err error) string { return c.zpagesError(err) }
