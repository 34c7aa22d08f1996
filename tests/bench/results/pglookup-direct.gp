set terminal pngcairo size 900,540 font ',10'
set output 'pglookup-direct.png'
set title 'pglookup (/pglookup?id=54321), direct to gearboxd: wrk -t1, 3 s per point'
set logscale x 2
set xlabel 'concurrent connections (wrk -c)'
set ylabel 'requests/s'
set yrange [0:*]
set grid
set key outside right top
plot 'pglookup-direct.dat' index 0 with linespoints lw 2 pt 7 title 'async-1', 'pglookup-direct.dat' index 1 with linespoints lw 2 pt 7 title 'async-2', 'pglookup-direct.dat' index 2 with linespoints lw 2 pt 7 title 'threadpool-1', 'pglookup-direct.dat' index 3 with linespoints lw 2 pt 7 title 'threadpool-64', 'pglookup-direct.dat' index 4 with linespoints lw 2 pt 7 title 'prefork-1', 'pglookup-direct.dat' index 5 with linespoints lw 2 pt 7 title 'prefork-8'
