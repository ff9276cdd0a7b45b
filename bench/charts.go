//go:build linux

package main

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one line of a chart.
type series struct {
	name string
	x, y []float64
}

// lineChart draws series as lines with points into a PNG at path.
func lineChart(path, title, xlabel, ylabel string, logX, logY bool, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for i, s := range ss {
		if len(s.x) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.x))
		for j := range s.x {
			pts[j].X, pts[j].Y = s.x[j], s.y[j]
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		c := chartColor(i)
		l.Color, sc.Color = c, c
		l.Dashes = plotutil.Dashes(i / len(palette))
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// palette: distinguishable colours; unipoll is always first, in black.
var palette = []color.Color{
	color.RGBA{0, 0, 0, 255},
	color.RGBA{213, 94, 0, 255},
	color.RGBA{0, 114, 178, 255},
	color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255},
	color.RGBA{230, 159, 0, 255},
	color.RGBA{86, 180, 233, 255},
	color.RGBA{120, 120, 120, 255},
}

func chartColor(i int) color.Color { return palette[i%len(palette)] }
