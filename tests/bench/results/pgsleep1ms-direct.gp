set terminal pngcairo size 900,540 font ',10'
set output 'pgsleep1ms-direct.png'
set title 'pgsleep1ms (/pgsleep), direct to gearboxd: wrk -t1, 3 s per point'
set logscale x 2
set xlabel 'concurrent connections (wrk -c)'
set ylabel 'requests/s'
set yrange [0:*]
set grid
set key outside right top
plot 'pgsleep1ms-direct.dat' index 0 with linespoints lw 2 pt 7 title 'async-1', 'pgsleep1ms-direct.dat' index 1 with linespoints lw 2 pt 7 title 'async-2', 'pgsleep1ms-direct.dat' index 2 with linespoints lw 2 pt 7 title 'threadpool-1', 'pgsleep1ms-direct.dat' index 3 with linespoints lw 2 pt 7 title 'threadpool-64', 'pgsleep1ms-direct.dat' index 4 with linespoints lw 2 pt 7 title 'prefork-1', 'pgsleep1ms-direct.dat' index 5 with linespoints lw 2 pt 7 title 'prefork-8'
