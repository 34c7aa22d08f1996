set terminal pngcairo size 900,540 font ',10'
set output 'hello-nginx-tcp.png'
set title 'hello (/hello), through nginx (1 worker) over TCP: wrk -t1, 3 s per point'
set logscale x 2
set xlabel 'concurrent connections (wrk -c)'
set ylabel 'requests/s'
set yrange [0:*]
set grid
set key outside right top
plot 'hello-nginx-tcp.dat' index 0 with linespoints lw 2 pt 7 title 'nginx return 200 (1 worker)', 'hello-nginx-tcp.dat' index 1 with linespoints lw 2 pt 7 title 'async-1', 'hello-nginx-tcp.dat' index 2 with linespoints lw 2 pt 7 title 'async-2', 'hello-nginx-tcp.dat' index 3 with linespoints lw 2 pt 7 title 'threadpool-1', 'hello-nginx-tcp.dat' index 4 with linespoints lw 2 pt 7 title 'threadpool-64', 'hello-nginx-tcp.dat' index 5 with linespoints lw 2 pt 7 title 'prefork-1', 'hello-nginx-tcp.dat' index 6 with linespoints lw 2 pt 7 title 'prefork-8'
