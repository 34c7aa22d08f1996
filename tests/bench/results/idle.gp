set terminal pngcairo size 900,540 font ',10'
set output 'idle.png'
set title 'daemon RSS per idle keep-alive connection (10000 idle)'
set style fill solid 0.6
set boxwidth 0.6
set xrange [-0.6:2.6]
set yrange [0:*]
set grid y
set ylabel 'bytes per connection'
set arrow from graph 0, first 1024 to graph 1, first 1024 nohead dt 2
plot 'idle.dat' using 0:2:xtic(1) with boxes notitle
