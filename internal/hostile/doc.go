// Package hostile holds no code: its tests are strata's hostile-input
// suite, one case for each way input from someone who is not the operator
// was found to reach too far or cost too much, driven through the public
// surface that input reaches (docs/SECURITY.md lists the boundaries and
// the test that guards each). Every case is bounded in time and in what
// it allocates, and fails rather than hangs.
package hostile
