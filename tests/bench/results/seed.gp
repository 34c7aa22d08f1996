set terminal pngcairo size 900,540 font ',10'
set output 'seed.png'
set title 'seed profile through nginx, /sleep?ms=1: httperf --rate 100 --num-conn N --num-call 10 (1,000 req/s offered)'
set style fill solid 0.6
set boxwidth 0.6
set xrange [-0.6:5.6]
set yrange [0:1150]
set grid y
set ylabel 'successful replies/s'
plot 'seed.dat' using 0:2:xtic(1) with boxes title '2xx/s', '' using 0:2:(sprintf('%d errors, %d 5xx', $3, $4)) with labels offset 0,1 notitle
