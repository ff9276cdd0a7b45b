//go:build linux

package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLineChart draws a chart on log axes, with a series that has no
// points (a contender that was skipped), and checks that the PNG decodes
// at the size asked for.
func TestLineChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.png")
	err := lineChart(path, "title", "N", "ns", true, true, []series{
		{name: "a", x: []float64{10, 100, 1000}, y: []float64{600, 610, 605}},
		{name: "skipped"},
		{name: "b", x: []float64{10, 100}, y: []float64{1000, 10000}},
	})
	require.NoError(t, err)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 8*96, img.Bounds().Dx()) // 8 inches at gonum's 96 dpi
}
