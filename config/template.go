package config

import _ "embed"

// template is the commented learnwatch.yaml that `learnwatch init` writes:
// every key with its default, commented out.
//
//go:embed template.yaml
var template []byte

// Template returns the commented configuration file for a new repository.
func Template() []byte { return append([]byte(nil), template...) }
