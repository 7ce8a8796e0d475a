package main

import (
	"strings"
	"testing"
)

const sinkBase = "name: p\ntables: [{name: a.b}]\n"

func TestSinkTypeDidYouMean(t *testing.T) {
	_, err := parseConfig([]byte(sinkBase+"sink: {type: webhok}\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), `sink.type: "webhok": did you mean "webhook"? want kafka, webhook, stdout or file`) {
		t.Fatalf("misspelt sink type: %v", err)
	}
}
